"""``npu_apply_adam_w``: one AdamW step on (var, m, v) in place, as torch_npu's ``out=(var, m, v)`` form.

Math (torch_npu's documented reference; the same as torch.optim.AdamW): with
g = -grad if maximize else grad,
m = beta1*m + (1-beta1)*g; v = beta2*v + (1-beta2)*g*g;
b1 = 1 - beta1_power*beta1; b2 = 1 - beta2_power*beta2 (beta*_power are the
powers before this step, beta^(step-1), as DeepSpeed's NPU FusedAdam passes them);
s = max(max_grad_norm, v) if amsgrad else v;
var = var*(1 - lr*weight_decay) - lr/b1 * m / (sqrt(s/b2) + epsilon).
``max_grad_norm`` is read, not updated (its schema marks no mutation). The
functional form without ``out`` has no state to update and raises
NotImplementedError.
"""
import torch

from npudist.compat.ops._lib import define, unsupported

SCHEMA_OUT = ("npu_apply_adam_w.out(Scalar beta1_power, Scalar beta2_power, Scalar lr, Scalar weight_decay, "
              "Scalar beta1, Scalar beta2, Scalar epsilon, Tensor grad, Tensor? max_grad_norm, bool? amsgrad, "
              "bool? maximize, *, Tensor(a!) var, Tensor(b!) m, Tensor(c!) v) -> (Tensor(a!), Tensor(b!), Tensor(c!))")


def _apply_adam_w_out(beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon, grad, max_grad_norm,
                      amsgrad, maximize, *, var, m, v):
    beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon = (
        float(s) for s in (beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon))
    if amsgrad and max_grad_norm is None:
        raise ValueError("torch_npu.npu_apply_adam_w: amsgrad=True needs max_grad_norm (the running max of v)")
    with torch.no_grad():
        g = grad.neg() if maximize else grad
        m.mul_(beta1).add_(g, alpha=1 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        b1, b2 = 1 - beta1_power * beta1, 1 - beta2_power * beta2
        second = torch.maximum(max_grad_norm, v) if amsgrad else v
        denom = (second / b2).sqrt_().add_(epsilon)
        var.mul_(1 - lr * weight_decay).addcdiv_(m, denom, value=-lr / b1)
    return var, m, v


define(SCHEMA_OUT, _apply_adam_w_out)


def npu_apply_adam_w(beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon, grad, max_grad_norm=None,
                     amsgrad=False, maximize=False, *, out=None):
    """``torch_npu.npu_apply_adam_w(..., out=(var, m, v))``: returns ``out`` updated in place (module docstring).

    Raises:
        NotImplementedError: ``out`` is not given (the functional form).
        ValueError: ``out`` is not three tensors, or amsgrad without max_grad_norm.
    """
    if out is None:
        raise unsupported("npu_apply_adam_w", "out=None", "pass out=(var, m, v): the state updated in place")
    if len(out) != 3:
        raise ValueError(f"torch_npu.npu_apply_adam_w: out must be (var, m, v), got {len(out)} tensors")
    var, m, v = out
    return torch.ops.npu.npu_apply_adam_w.out(beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon,
                                              grad, max_grad_norm, amsgrad, maximize, var=var, m=m, v=v)
