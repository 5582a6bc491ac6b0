# Installs what scripts/packages.txt lists for a group (demo or test) on Debian and Ubuntu.
# Sourced by scripts/demo.sh, scripts/run_tests.sh and .ci/run:
#
#   source scripts/lib/deps.sh
#   npkit_deps_ensure demo.sh demo      # returns 0 when everything is there (installed now or before)
#
# Run as root (CI, containers), the missing packages are installed with apt-get; otherwise the one
# command to run is printed and the function returns 1.  Without dpkg (another distribution) the
# commands the group needs are looked up instead and the missing ones named.
# Settings:
#   NPKIT_SKIP_DEPS=1        check nothing (you installed everything your own way)
#   NPKIT_DEPS_DRY_RUN=1     print the apt-get commands instead of running them, and go on
#   NPKIT_DEPS_MISSING="a b" take these packages as not installed (to try the logic on a machine
#                            that has them); NPKIT_DEPS_UID=N runs it as if the user id were N

npkit_deps_file() {
  echo "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/packages.txt"
}

# The packages of a group, one per line.
npkit_deps_list() {
  local group=$1
  sed -e 's/#.*//' "$(npkit_deps_file)" | awk -v g="$group" 'NF { for (i = 2; i <= NF; i++) if ($i == g) print $1 }'
}

npkit_deps_installed() {
  local pkg=$1 m
  for m in ${NPKIT_DEPS_MISSING:-}; do
    [ "$m" = "$pkg" ] && return 1
  done
  [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = "install ok installed" ]
}

# Without dpkg: the commands behind the group's packages.
npkit_deps_commands() {
  case $1 in
    demo) echo "cmake make cc python3 mpirun" ;;
    test) echo "cmake make cc python3 mpirun clang chromium" ;;
  esac
}

npkit_deps_ensure() {
  local who=$1 group=$2 pkg missing=() cmd
  [ "${NPKIT_SKIP_DEPS:-0}" = 1 ] && return 0
  if ! command -v dpkg-query > /dev/null 2>&1; then
    for cmd in $(npkit_deps_commands "$group"); do
      command -v "$cmd" > /dev/null 2>&1 || missing+=("$cmd")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "$who: not found: ${missing[*]}. Install them (the Debian names are in scripts/packages.txt)," \
         "or set NPKIT_SKIP_DEPS=1 if they are there under other names." >&2
    return 1
  fi
  while read -r pkg; do
    npkit_deps_installed "$pkg" || missing+=("$pkg")
  done < <(npkit_deps_list "$group")
  [ ${#missing[@]} -eq 0 ] && return 0
  local install="apt-get install -y -qq ${missing[*]}"
  if [ "${NPKIT_DEPS_UID:-$(id -u)}" != 0 ]; then
    echo "$who: missing packages: ${missing[*]}. Install them with:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    echo "then run $who again." >&2
    return 1
  fi
  echo "$who: installing ${missing[*]} (apt-get, as root)" >&2
  if [ "${NPKIT_DEPS_DRY_RUN:-0}" = 1 ]; then
    echo "would run: apt-get update -qq" >&2
    echo "would run: DEBIAN_FRONTEND=noninteractive $install" >&2
    return 0
  fi
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive $install > /dev/null || {
    echo "$who: apt-get could not install ${missing[*]}" >&2
    return 1
  }
}
