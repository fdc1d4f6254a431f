#!/usr/bin/env bash
# vaultgate transparent mode with iptables: the rules of
# config/nftables-sandbox.nft, for hosts managed with iptables (iptables-nft or
# iptables-legacy). Use one of the two files, not both.
#
# For a sandbox behind one host interface:
#   * its TCP 80 and 443 are redirected to vaultgate's transparent listener;
#   * it may reach vaultgate's explicit proxy and send DNS to one resolver;
#   * everything else it sends is dropped (forwarded or to the host itself);
#   * IPv6 from it is dropped except neighbour discovery and the proxy ports
#     (the redirect is IPv4-only; clients fall back to IPv4).
#
# Usage, as root:
#   SANDBOX_IF=veth-sbx ALLOWED_DNS=10.200.0.1 config/iptables-sandbox.sh          # install or refresh
#   SANDBOX_IF=veth-sbx config/iptables-sandbox.sh delete                            # remove
# Variables (defaults): SANDBOX_IF (veth-sbx; a trailing + matches a family of
# interfaces, e.g. veth-sbx+), VAULTGATE_PORT (3129, listen.transparent),
# PROXY_PORT (3128, listen.proxy), ALLOWED_DNS (required, an IPv4 address),
# IPV6 (1; 0 skips ip6tables on hosts without IPv6).
#
# The rules live in their own chains (VG_SBX_PRE in nat, VG_SBX_IN and
# VG_SBX_FWD in filter), jumped to from the top of PREROUTING, INPUT and
# FORWARD. They only ever DROP or RETURN: traffic they let through goes on to
# the host's own rules, as if they were not there. Each table is loaded with
# one iptables-restore commit, so a refresh leaves no moment without rules.
# They do not survive a reboot: run this from a unit ordered after the network
# (or save them with iptables-save / netfilter-persistent).
set -euo pipefail

SANDBOX_IF=${SANDBOX_IF:-veth-sbx}
VAULTGATE_PORT=${VAULTGATE_PORT:-3129}
PROXY_PORT=${PROXY_PORT:-3128}
ALLOWED_DNS=${ALLOWED_DNS:-}
IPV6=${IPV6:-1}
action=${1:-add}

die() { echo "iptables-sandbox.sh: $*" >&2; exit 2; }

# The values end up in rules: refuse anything that is not plainly what it should be.
[[ $SANDBOX_IF =~ ^[A-Za-z0-9_.-]{1,15}\+?$ ]] || die "SANDBOX_IF=$SANDBOX_IF is not an interface name"
for port in "$VAULTGATE_PORT" "$PROXY_PORT"; do
  if ! [[ $port =~ ^[1-9][0-9]{0,4}$ ]] || ((port > 65535)); then die "port $port is not 1-65535"; fi
done
case $action in
  add)
    [[ $ALLOWED_DNS =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}$ ]] ||
      die "set ALLOWED_DNS to the IPv4 address of the one resolver the sandbox may query"
    ;;
  delete) ;;
  *) die "usage: $0 [add|delete]" ;;
esac
[ "$(id -u)" -eq 0 ] || die "run as root"

# (table, parent chain, own chain) for each family.
hooks=("nat PREROUTING VG_SBX_PRE" "filter INPUT VG_SBX_IN" "filter FORWARD VG_SBX_FWD")
hooks6=("filter INPUT VG_SBX_IN" "filter FORWARD VG_SBX_FWD")

# Prints "-I PARENT 1 -j CHAIN" unless the jump is already there, so that a
# refresh does not stack jumps.
jump_unless_present() { # cmd table parent chain
  "$1" -w -t "$2" -C "$3" -j "$4" 2>/dev/null || echo "-I $3 1 -j $4"
}

remove() { # cmd hooks...
  local cmd=$1 table parent chain
  shift
  for h in "$@"; do
    read -r table parent chain <<<"$h"
    while "$cmd" -w -t "$table" -D "$parent" -j "$chain" 2>/dev/null; do :; done
    "$cmd" -w -t "$table" -F "$chain" 2>/dev/null || true
    "$cmd" -w -t "$table" -X "$chain" 2>/dev/null || true
  done
}

if [ "$action" = delete ]; then
  remove iptables "${hooks[@]}"
  [ "$IPV6" = 0 ] || remove ip6tables "${hooks6[@]}"
  exit 0
fi

in_sbx="-i $SANDBOX_IF"

# IPv4. A chain declared in the restore input (":NAME - [0:0]") is created if
# missing and emptied if present, in the same commit as its new rules.
iptables-restore -w --noflush <<EOF
*nat
:VG_SBX_PRE - [0:0]
# Web traffic goes to vaultgate whatever address the sandbox dialled, so code
# that ignores HTTPS_PROXY cannot go around the gateway. Port 80 too: a
# redirected request the listener cannot serve fails closed instead of leaving.
-A VG_SBX_PRE $in_sbx -p tcp -m multiport --dports 80,443 -m comment --comment "sandbox web traffic -> vaultgate transparent listener" -j REDIRECT --to-ports $VAULTGATE_PORT
$(jump_unless_present iptables nat PREROUTING VG_SBX_PRE)
COMMIT
*filter
:VG_SBX_IN - [0:0]
:VG_SBX_FWD - [0:0]
# Replies to connections the host opened or accepted, and their ICMP errors.
-A VG_SBX_IN $in_sbx -m conntrack --ctstate ESTABLISHED,RELATED -m comment --comment "replies to accepted flows" -j RETURN
# Invalid packets match no flow: nothing to allow.
-A VG_SBX_IN $in_sbx -m conntrack --ctstate INVALID -m comment --comment "no conntrack entry" -j DROP
# What REDIRECT produced (destination port now VAULTGATE_PORT), and the explicit proxy.
-A VG_SBX_IN $in_sbx -p tcp -m multiport --dports $PROXY_PORT,$VAULTGATE_PORT -m comment --comment "vaultgate proxy and transparent listener" -j RETURN
# The resolver may be the host itself (dnsmasq on the bridge address).
-A VG_SBX_IN $in_sbx -d $ALLOWED_DNS -p udp --dport 53 -m comment --comment "DNS to the allowed resolver (udp)" -j RETURN
-A VG_SBX_IN $in_sbx -d $ALLOWED_DNS -p tcp --dport 53 -m comment --comment "DNS to the allowed resolver (tcp, large answers)" -j RETURN
# Everything else addressed to the host: SSH, a TCP admin API, any local service.
-A VG_SBX_IN $in_sbx -m comment --comment "sandbox -> host: nothing else" -j DROP
# The proxy injects real keys for whoever connects (the default session), so
# only the sandbox and local clients may reach it. Remove this rule, or add
# interfaces, if other networks are meant to use the proxy.
-A VG_SBX_IN ! -i lo -p tcp -m multiport --dports $PROXY_PORT,$VAULTGATE_PORT -m comment --comment "proxy ports: sandbox and loopback only" -j DROP
# A resolver elsewhere is reached through the host: that address, port 53 only.
-A VG_SBX_FWD $in_sbx -d $ALLOWED_DNS -p udp --dport 53 -m comment --comment "DNS to the allowed resolver (udp)" -j RETURN
-A VG_SBX_FWD $in_sbx -d $ALLOWED_DNS -p tcp --dport 53 -m comment --comment "DNS to the allowed resolver (tcp)" -j RETURN
# No other route out: other ports, QUIC, other resolvers (DNS tunnelling), ICMP.
# TCP 80/443 never get here: PREROUTING sent them to vaultgate.
-A VG_SBX_FWD $in_sbx -m comment --comment "sandbox -> anywhere else: dropped" -j DROP
$(jump_unless_present iptables filter INPUT VG_SBX_IN)
$(jump_unless_present iptables filter FORWARD VG_SBX_FWD)
COMMIT
EOF

[ "$IPV6" = 0 ] && exit 0

# IPv6: no redirect (the transparent listener is an IPv4 address), so nothing
# leaves; the host keeps neighbour discovery and the proxy ports (for a proxy
# listening on [::]).
ip6tables-restore -w --noflush <<EOF
*filter
:VG_SBX_IN - [0:0]
:VG_SBX_FWD - [0:0]
-A VG_SBX_IN $in_sbx -m conntrack --ctstate ESTABLISHED,RELATED -m comment --comment "replies to accepted flows" -j RETURN
-A VG_SBX_IN $in_sbx -m conntrack --ctstate INVALID -m comment --comment "no conntrack entry" -j DROP
-A VG_SBX_IN $in_sbx -p ipv6-icmp -m icmp6 --icmpv6-type neighbour-solicitation -m comment --comment "IPv6 neighbour discovery" -j RETURN
-A VG_SBX_IN $in_sbx -p ipv6-icmp -m icmp6 --icmpv6-type neighbour-advertisement -m comment --comment "IPv6 neighbour discovery" -j RETURN
-A VG_SBX_IN $in_sbx -p ipv6-icmp -m icmp6 --icmpv6-type router-solicitation -m comment --comment "IPv6 neighbour discovery" -j RETURN
-A VG_SBX_IN $in_sbx -p tcp -m multiport --dports $PROXY_PORT,$VAULTGATE_PORT -m comment --comment "vaultgate proxy" -j RETURN
-A VG_SBX_IN $in_sbx -m comment --comment "sandbox -> host: nothing else" -j DROP
-A VG_SBX_IN ! -i lo -p tcp -m multiport --dports $PROXY_PORT,$VAULTGATE_PORT -m comment --comment "proxy ports: sandbox and loopback only" -j DROP
-A VG_SBX_FWD $in_sbx -m comment --comment "sandbox -> anywhere over IPv6: dropped" -j DROP
$(jump_unless_present ip6tables filter INPUT VG_SBX_IN)
$(jump_unless_present ip6tables filter FORWARD VG_SBX_FWD)
COMMIT
EOF
