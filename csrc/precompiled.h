// The torch/ATen/c10/pybind11 headers npudist's units use, compiled once per build into a GCC
// precompiled header (setup.py's PrecompiledHeaderBuild) and force-included into every unit:
// parsing them took most of a unit's ~20 s compile. Units still include what they use themselves
// (the build without a PCH, NPUDIST_BUILD_PCH=0, must compile); this list only decides what is
// parsed once. A header added here must be one many units include.
#pragma once

// Python.h first: it sets feature macros the C library headers read.
#include <Python.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <pybind11/chrono.h>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/csrc/utils/pybind.h>
#include <torch/library.h>
