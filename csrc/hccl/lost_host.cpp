// Naming the ranks behind a broken inter-host connection: Gloo reports the
// peer's address only ("Connection reset by peer [10.0.0.2]:4711"); the
// group knows each rank's host identity, which resolves to an address.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <c10/util/StringUtil.h>

#include <regex>
#include <set>

#include "hccl/engine.h"

namespace npudist::hccl {

namespace {

std::set<std::string> addressesOf(const std::string& host) {
  std::set<std::string> out;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return out;
  for (addrinfo* a = res; a; a = a->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {0};
    const void* src = a->ai_family == AF_INET
                          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
                          : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if (inet_ntop(a->ai_family, src, buf, sizeof(buf))) out.insert(buf);
  }
  freeaddrinfo(res);
  return out;
}

std::string ranksOf(const Topology& topo, int host) {
  std::vector<int> ranks;
  for (int r = 0; r < topo.size; ++r)
    if (topo.host_of_rank[size_t(r)] == host) ranks.push_back(r);
  return "[" + c10::Join(", ", ranks) + "]";
}

}  // namespace

std::string describeLostHost(const Topology& topo, const std::string& m) {
  static const char* kBroken[] = {"Connection closed by peer", "Connection reset by peer", "Broken pipe", "Read error",
                                  "Connection refused"};
  bool broken = false;
  for (const char* k : kBroken) broken = broken || m.find(k) != std::string::npos;
  if (!broken || topo.singleHost()) return "";
  std::smatch match;
  static const std::regex kAddr(R"(\[([0-9a-fA-F:.]+)\]:\d+)");
  const std::string addr = std::regex_search(m, match, kAddr) ? match[1].str() : "";
  std::vector<int> suspects;
  for (int h = 0; h < int(topo.hosts.size()); ++h)
    if (h != topo.my_host && !addr.empty() && addressesOf(topo.hosts[size_t(h)]).count(addr)) suspects.push_back(h);
  if (suspects.size() == 1) {
    const int h = suspects[0];
    return c10::str("the connection to host '", topo.hosts[size_t(h)], "' (", addr, ") broke: rank(s) ",
                    ranksOf(topo, h), " of this group are lost (their host or processes died?)");
  }
  if (!addr.empty() && addressesOf(topo.hosts[size_t(topo.my_host)]).count(addr))
    return c10::str("the connection to another rank of this host (", addr, ") broke: rank(s) ",
                    ranksOf(topo, topo.my_host), " share this host");
  std::string others;
  for (int h = 0; h < int(topo.hosts.size()); ++h)
    if (h != topo.my_host)
      others += c10::str(others.empty() ? "" : ", ", "'", topo.hosts[size_t(h)], "' ", ranksOf(topo, h));
  return c10::str("a connection to another host", addr.empty() ? "" : " (" + addr + ")", " broke: one of the hosts ",
                  others, " (group ranks) is lost");
}

}  // namespace npudist::hccl
