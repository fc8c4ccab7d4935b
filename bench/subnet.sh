# Sourced (bash) by bench scripts that put addresses on interfaces of the
# root namespace or create interfaces and namespaces: what they use must
# be free on this host, so that a run neither takes over a network the
# host routes (a LAN, a VPN, a container bridge) nor deletes an interface
# or namespace it did not make. The Rust tests do the same
# (crates/sluice-testkit/src/net.rs), with the same lock files.
#
#   free_subnet VAR [PREFERRED]
#       sets VAR to a /24 prefix ("10.77.0") that no route or address of
#       the host overlaps (ip -4 route show table all, ip -4 -o addr show;
#       the default route aside) and no other run holds: a lock file
#       ${TMPDIR:-/tmp}/sluice-subnet-PREFIX.lock stays locked until the
#       script exits. PREFERRED first, then 10.77.0 up to 10.254.255.
#       SUBNET=a.b.c in the environment is used as it is (the caller, a
#       test, holds its lock) once the host is checked not to use it;
#       SLUICE_TEST_SUBNETS="a.b.c.0/24 ..." replaces the candidates.
#       Fails naming the clashes when none is free.
#   names_free NAME...
#       fails, naming it, when an interface of this namespace or a network
#       namespace already has one of these names.

# _subnet_int A.B.C.D: sets _sn_i to the address as a number.
_subnet_int() { local IFS=.; set -- $1; _sn_i=$(( ($1 << 24) | ($2 << 16) | ($3 << 8) | $4 )); }

# The host's IPv4 prefixes: _sn_net[i]/_sn_len[i] from line _sn_line[i].
_subnet_host() {
  _sn_net=() _sn_len=() _sn_line=()
  local dst line rest w prev
  while IFS= read -r line; do
    read -r dst rest <<< "$line"
    case $dst in unicast|local|broadcast|multicast|blackhole|unreachable|prohibit|throw|nat|anycast)
      read -r dst rest <<< "$rest" ;;
    esac
    _subnet_add "$dst" "$line"
  done < <(ip -4 route show table all 2>/dev/null)
  while IFS= read -r line; do
    prev=
    for w in $line; do
      case $prev in inet|peer) _subnet_add "$w" "${line%%\\*}" ;; esac
      prev=$w
    done
  done < <(ip -4 -o addr show 2>/dev/null)
}

# _subnet_add A.B.C.D[/LEN] LINE
_subnet_add() {
  local a=${1%/*} len=32 words
  [[ $1 == */* ]] && len=${1#*/}
  [[ $a =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ && $len =~ ^[0-9]+$ ]] || return 0
  (( len > 0 && len <= 32 )) || return 0
  _subnet_int "$a"
  read -r -a words <<< "$2"
  _sn_net+=("$_sn_i") _sn_len+=("$len") _sn_line+=("${words[*]}")
}

# _subnet_clash PREFIX: status 0, and _sn_clash the host's line, when a
# prefix of the host overlaps PREFIX.0/24.
_subnet_clash() {
  local i m mask
  _subnet_int "$1.0"
  for i in "${!_sn_net[@]}"; do
    m=${_sn_len[$i]}; (( m > 24 )) && m=24
    mask=$(( (0xffffffff << (32 - m)) & 0xffffffff ))
    if (( (_sn_net[i] & mask) == (_sn_i & mask) )); then _sn_clash=${_sn_line[$i]}; return 0; fi
  done
  return 1
}

# _subnet_take PREFIX: status 0 when PREFIX is free on the host and now
# locked by this script (the descriptor stays open until it exits).
_subnet_take() {
  local fd
  _sn_tried=$((_sn_tried + 1))
  if _subnet_clash "$1"; then
    # Each line of the host's once, the first /24 it takes.
    [[ ${#_sn_clashes[@]} -lt 5 && "${_sn_clashes[*]}" != *"'$_sn_clash'"* ]] &&
      _sn_clashes+=("$1.0/24 overlaps the host's '$_sn_clash'")
    return 1
  fi
  command -v flock >/dev/null 2>&1 || return 0
  exec {fd}>"${TMPDIR:-/tmp}/sluice-subnet-$1.lock" || return 1
  flock -n "$fd" && return 0
  exec {fd}>&-
  _sn_held=$((_sn_held + 1))
  return 1
}

free_subnet() {
  local var=$1 pref=${2:-10.77.0} c b d
  _subnet_host
  if [ -n "${SUBNET:-}" ]; then
    c=${SUBNET%/24}; [[ $c == *.*.*.* ]] && c=${c%.0}
    if _subnet_clash "$c"; then
      echo "subnet.sh: SUBNET=$c.0/24 overlaps the host's '$_sn_clash'" >&2
      return 1
    fi
    printf -v "$var" %s "$c"
    return 0
  fi
  _sn_tried=0 _sn_held=0 _sn_clashes=()
  if [ -n "${SLUICE_TEST_SUBNETS:-}" ]; then
    for c in ${SLUICE_TEST_SUBNETS//,/ }; do
      c=${c%/24}; [[ $c == *.*.*.* ]] && c=${c%.0}
      _subnet_take "$c" && { printf -v "$var" %s "$c"; return 0; }
    done
  else
    _subnet_take "$pref" && { printf -v "$var" %s "$pref"; return 0; }
    for ((b = 77; b <= 254; b++)); do for ((d = 0; d <= 255; d++)); do
      c=10.$b.$d
      [ "$c" != "$pref" ] && _subnet_take "$c" && { printf -v "$var" %s "$c"; return 0; }
    done; done
  fi
  echo "subnet.sh: no free /24 for a test network among $_sn_tried candidates ($_sn_held held by other runs): $(printf '%s; ' "${_sn_clashes[@]}")name free ones in SLUICE_TEST_SUBNETS" >&2
  return 1
}

names_free() {
  local n bad=()
  for n in "$@"; do
    if ip link show "$n" >/dev/null 2>&1 || [ -e "/run/netns/$n" ]; then bad+=("$n"); fi
  done
  [ ${#bad[@]} -eq 0 ] && return 0
  echo "subnet.sh: already on this host: ${bad[*]} (an interface or network namespace this run did not make; a leftover of an earlier run goes with 'ip link del NAME' or 'ip netns del NAME')" >&2
  return 1
}
