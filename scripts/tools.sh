#!/usr/bin/env bash
# Builds the reference tools the tests check bootwright's output against -- kubeadm,
# kube-apiserver, etcd, ignition, ignition-validate, butane, the kubeadm of older minors
# kubeadm-1.N, Cluster API's kubeadm bootstrap provider kubeadm-bootstrap-manager and core
# cluster-api-manager, and matchbox (the peer `npm run bench` storms beside bootwright) (from
# the Go module proxy, at the versions pinned by the Go modules in
# tools/reference/) and schemathesis (from PyPI, at
# tools/reference/schemathesis/requirements.txt) -- into a cache outside the repository:
#
#   ${BOOTWRIGHT_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bootwright/tools}/
#     parts/<group>-<hash>/bin/<tool>   the binaries; <group> is kubernetes, etcd, coreos,
#                                       cluster-api, matchbox, schemathesis or kubeadm-1.N (one per
#                                       module tools/reference/kubeadm-1.N/), <hash> covers that
#                                       group's pins (go.mod + go.sum, or requirements.txt), its
#                                       tools' build parameters (tool_params below) and version
#                                       flags (ldflags), commits.txt and the Go or Python that
#                                       builds it
#     parts/schemathesis-<hash>/venv/   schemathesis's virtualenv
#     <key>/bin/<tool>                  a symlink per tool into parts/; <key> covers every
#                                       group's <hash>: the directory to put on PATH
#     current -> <key>                  the key of the last run (for people; tests ask --print)
#
# so a machine builds each tool once, a changed pin rebuilds only its own group, and the
# other groups' binaries are reused. A tool counts as built once bin/<tool> exists; it is
# built in a temp dir and renamed there (the venv's symlink is made last), so an
# interrupted build is never taken as good: its leftovers are removed by the next run.
#
# kubeadm N validates configs only for control planes N-1 and N, so older minors have
# their own kubeadm: kubeadm-1.N, built from tools/reference/kubeadm-1.N/ (the module's
# name is its minor), and kubeadm-1.M, a second name of kubeadm, M being the minor of
# tools/reference/kubernetes/. A kubeadm-1.N newer than kubeadm is built only when named
# (say, to try a coming release): "all" below means all but those.
#
# Usage: scripts/tools.sh [--print | --list] [--apt] [--prune] [TOOL...]
#   (no option)  build what is missing of TOOL... (default: all), then print the bin dir
#   --print      build nothing; print the bin dir; exit 0 if TOOL... (default: all) are
#                all there, 1 if not
#   --list       build nothing; print every tool name, one a line, those "all" leaves
#                out marked with a trailing " (on request)"
#   --apt        install missing Debian build dependencies (libblkid-dev for ignition's
#                cgo) with apt-get
#   --prune      afterwards, remove every key and part that the current pins don't use
# The last line on stdout is always the absolute bin dir; progress and timings go to stderr.
# Needs: go (the version in tools/reference/*/go.mod or newer), python3 with venv, and for
# ignition a C compiler and libblkid's headers.
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REF=$ROOT/tools/reference
CACHE=${BOOTWRIGHT_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bootwright/tools}
CACHE=$(realpath -m -- "$CACHE")

log() { printf '%s\n' "tools.sh: $*" >&2; }
die() { log "$*"; exit 2; }

# The kubeadm minors: kubeadm's (tools/reference/kubernetes/) and one per module
# tools/reference/kubeadm-1.N/, which must pin k8s.io/kubernetes v1.N.x.
kube_minor() { # kube_minor GO.MOD -> N of its "k8s.io/kubernetes v1.N.x" requirement
  sed -n 's#^[[:space:]]*\(require[[:space:]]\{1,\}\)\{0,1\}k8s.io/kubernetes v1\.\([0-9]\{1,\}\)\..*#\2#p' "$1" | head -n1
}
KUBE_MINOR=$(kube_minor "$REF/kubernetes/go.mod")
[[ -n $KUBE_MINOR ]] || die "tools/reference/kubernetes/go.mod requires no k8s.io/kubernetes v1.N.x"
KUBEADM_GROUPS=() KUBEADM_TOOLS=("kubeadm-1.$KUBE_MINOR") ON_REQUEST=()
for d in "$REF"/kubeadm-1.*/; do
  [[ -f $d/go.mod ]] || continue
  g=$(basename "$d") n=${g#kubeadm-1.}
  [[ $n =~ ^[0-9]+$ ]] || die "tools/reference/$g: not named kubeadm-1.<minor>"
  [[ $(kube_minor "$d/go.mod") == "$n" ]] || die "tools/reference/$g/go.mod does not require k8s.io/kubernetes v1.$n.x"
  ((n != KUBE_MINOR)) || die "tools/reference/$g: minor 1.$n is kubeadm's own (tools/reference/kubernetes/)"
  KUBEADM_GROUPS+=("$g") KUBEADM_TOOLS+=("$g")
  ((n < KUBE_MINOR)) || ON_REQUEST+=("$g")
done
mapfile -t KUBEADM_TOOLS < <(printf '%s\n' "${KUBEADM_TOOLS[@]}" | sort -t. -k2,2n)
ALL_TOOLS=(kubeadm "${KUBEADM_TOOLS[@]}" kube-apiserver etcd kubeadm-bootstrap-manager cluster-api-manager ignition-validate ignition butane matchbox schemathesis)
DEFAULT_TOOLS=()
for t in "${ALL_TOOLS[@]}"; do
  [[ " ${ON_REQUEST[*]} " == *" $t "* ]] || DEFAULT_TOOLS+=("$t")
done

# ---------------------------------------------------------------------------------------
# What each tool is and how upstream builds it. What it sets for a group's tools is part of
# that group's hash (group_inputs): change a flag here and that group is built anew.
tool_params() {
  of='' # a second name of tool $of: built once, as $of
  case $1 in
    kubeadm | kube-apiserver)
      # hack/lib/golang.sh: static (CGO_ENABLED=0, KUBE_STATIC_BINARIES), -trimpath,
      # -s -w, tags selinux,notest,grpcnotrace; version -X from hack/lib/version.sh.
      group=kubernetes pkg=k8s.io/kubernetes/cmd/$1 cgo=0 buildmode='' tags=selinux,notest,grpcnotrace
      ldflags_base='-s -w' ldflags_kind=kube version_args=(--version)
      if [[ $1 == kubeadm ]]; then version_args=(version -o short); fi ;;
    kubeadm-1.*)
      # kubeadm of one minor: that of tools/reference/kubernetes/ (a second name of kubeadm),
      # or tools/reference/kubeadm-1.N/ built as kubeadm is, its version -X flags its own.
      if [[ $1 == "kubeadm-1.$KUBE_MINOR" ]]; then
        group=kubernetes of=kubeadm
      elif [[ " ${KUBEADM_GROUPS[*]} " == *" $1 "* ]]; then
        group=$1
      else
        return 1
      fi
      pkg=k8s.io/kubernetes/cmd/kubeadm cgo=0 buildmode='' tags=selinux,notest,grpcnotrace
      ldflags_base='-s -w' ldflags_kind=kube version_args=(version -o short) ;;
    etcd)
      # scripts/build_lib.sh + build-binary.sh: CGO_ENABLED=0, -trimpath, -s -w, GitSHA.
      group=etcd pkg=go.etcd.io/etcd/server/v3 cgo=0 buildmode='' tags=
      ldflags_base='-s -w' ldflags_kind=etcd version_args=(--version) ;;
    kubeadm-bootstrap-manager)
      # Cluster API's Makefile (manager-kubeadm-bootstrap): CGO_ENABLED=0, -trimpath,
      # version -X flags from hack/version.sh; the binary is named as the Makefile names it.
      group=cluster-api pkg=sigs.k8s.io/cluster-api/bootstrap/kubeadm cgo=0 buildmode='' tags=
      ldflags_base='' ldflags_kind=capi version_args=(--help) ;;
    cluster-api-manager)
      # The same, for Cluster API's core manager (manager-core; the Machine, Cluster,
      # MachineSet and MachineDeployment controllers).
      group=cluster-api pkg=sigs.k8s.io/cluster-api/core cgo=0 buildmode='' tags=
      ldflags_base='' ldflags_kind=capi version_args=(--help) ;;
    ignition)
      # ./build: CGO_ENABLED=1 (libblkid), -buildmode=pie, version.Raw = git describe.
      group=coreos pkg=github.com/coreos/ignition/v2/internal cgo=1 buildmode=pie tags=
      ldflags_base='' ldflags_kind=ignition version_args=(-version) ;;
    ignition-validate)
      # ./build_for_container (the published ignition-validate image): CGO_ENABLED=0.
      group=coreos pkg=github.com/coreos/ignition/v2/validate cgo=0 buildmode='' tags=
      ldflags_base='' ldflags_kind=ignition version_args=(--version) ;;
    butane)
      # ./build: CGO_ENABLED=0, -w, version.Raw = git describe.
      group=coreos pkg=github.com/coreos/butane/internal cgo=0 buildmode='' tags=
      ldflags_base='-w' ldflags_kind=butane version_args=(--version) ;;
    matchbox)
      # Makefile: CGO_ENABLED=0, -w, version.Version = git describe.
      group=matchbox pkg=github.com/poseidon/matchbox/cmd/matchbox cgo=0 buildmode='' tags=
      ldflags_base='-w' ldflags_kind=matchbox version_args=(-version) ;;
    schemathesis)
      group=schemathesis pkg='' cgo='' buildmode='' tags='' ldflags_base='' ldflags_kind='' version_args=(--version) ;;
    *) return 1 ;;
  esac
}

# ---------------------------------------------------------------------------------------
PRINT=0 APT=0 PRUNE=0 LIST=0 WANT=()
for arg; do
  case $arg in
    --print) PRINT=1 ;;
    --list) LIST=1 ;;
    --apt) APT=1 ;;
    --prune) PRUNE=1 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) die "unknown option $arg (see --help)" ;;
    *) tool_params "$arg" || die "unknown tool $arg (one of: ${ALL_TOOLS[*]})"; WANT+=("$arg") ;;
  esac
done
((${#WANT[@]})) || WANT=("${DEFAULT_TOOLS[@]}")
if ((LIST)); then
  for t in "${ALL_TOOLS[@]}"; do
    if [[ " ${ON_REQUEST[*]} " == *" $t "* ]]; then printf '%s (on request)\n' "$t"; else printf '%s\n' "$t"; fi
  done
  exit 0
fi

# The Go and Python that build the tools, as they are: no toolchain switch, no workspace,
# the host platform, GOFLAGS of our own.
unset GOFLAGS GOOS GOARCH GOWORK
export GOTOOLCHAIN=local GOWORK=off GOFLAGS='-mod=readonly -trimpath -buildvcs=false'
command -v go >/dev/null || die "go not found (install Go >= $(sed -n 's/^go //p' "$REF/kubernetes/go.mod"))"
GO_ENV=$(cd "$REF" && go env GOVERSION GOOS GOARCH GOAMD64 GOARM64 GOEXPERIMENT CC)
PYTHON=$(command -v python3 || true)
if [[ -n $PYTHON ]]; then
  PY_ENV="$(realpath "$PYTHON") $("$PYTHON" -c 'import platform, sys; print(sys.version, platform.machine())')"
else
  PY_ENV=none
fi

# module -> "version time" of a group's pinned module (time: the release's, from the proxy).
mod_version() { # mod_version GROUP MODULE
  local out
  out=$(cd "$REF/$1" && go list -m -f '{{.Version}} {{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' "$2")
  [[ $out == v* ]] || die "no version of $2 in tools/reference/$1/go.mod"
  printf '%s\n' "$out"
}
mod_commit() { # mod_commit MODULE VERSION -> commit from commits.txt, or ""
  awk -v m="$1" -v v="$2" '$1 == m && $2 == v { print $3 }' "$REF/commits.txt"
}

# The version -X flags upstream's build scripts set, one function per ldflags_kind: ldflags_KIND GROUP.
ldflags_kube() {
  local m v t c p kv out=''
  m=$(mod_version "$1" k8s.io/kubernetes) && read -r v t <<<"$m"
  c=$(mod_commit k8s.io/kubernetes "$v")
  local major=${v#v} && major=${major%%.*}
  local minor=${v#v*.} && minor=${minor%%.*}
  for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    for kv in "gitVersion=$v" "gitMajor=$major" "gitMinor=$minor" "gitCommit=$c" \
      "gitTreeState=archive" "buildDate=${t:-1970-01-01T00:00:00Z}"; do
      out+=" -X '$p.$kv'"
    done
  done
  printf '%s' "$out"
}
ldflags_etcd() {
  local m v t c
  m=$(mod_version etcd go.etcd.io/etcd/server/v3) && read -r v t <<<"$m"
  c=$(mod_commit go.etcd.io/etcd/server/v3 "$v")
  printf '%s' " -X 'go.etcd.io/etcd/api/v3/version.GitSHA=${c:0:9}'"
}
ldflags_capi() {
  local m v t kv out=''
  m=$(mod_version cluster-api sigs.k8s.io/cluster-api) && read -r v t <<<"$m"
  local major=${v#v} && major=${major%%.*}
  local minor=${v#v*.} && minor=${minor%%.*}
  for kv in "gitVersion=$v" "gitMajor=$major" "gitMinor=$minor" "gitTreeState=archive" "buildDate=${t:-1970-01-01T00:00:00Z}"; do
    out+=" -X 'sigs.k8s.io/cluster-api/version.$kv'"
  done
  printf '%s' "$out"
}
ldflags_ignition() {
  local m v t
  m=$(mod_version coreos github.com/coreos/ignition/v2) && read -r v t <<<"$m"
  printf '%s' " -X 'github.com/coreos/ignition/v2/internal/version.Raw=$v'"
}
ldflags_butane() {
  local m v t
  m=$(mod_version coreos github.com/coreos/butane) && read -r v t <<<"$m"
  printf '%s' " -X 'github.com/coreos/butane/internal/version.Raw=$v'"
}
ldflags_matchbox() {
  local m v t
  m=$(mod_version matchbox github.com/poseidon/matchbox) && read -r v t <<<"$m"
  printf '%s' " -X 'github.com/poseidon/matchbox/matchbox/version.Version=$v'"
}

sha() { sha256sum | cut -c1-16; }

# Everything a group's binaries are made of; its hash names the group's part directory:
# its tools' parameters and the version flags' recipe, not those of other groups, so a new
# tool or a changed flag rebuilds its own group only.
group_inputs() { # group_inputs GROUP
  local t group of pkg cgo buildmode tags ldflags_base ldflags_kind version_args
  for t in "${ALL_TOOLS[@]}"; do
    tool_params "$t"
    [[ $group == "$1" ]] || continue
    printf '%s\n' "$t of=$of pkg=$pkg cgo=$cgo buildmode=$buildmode tags=$tags ldflags_base=$ldflags_base version_args=${version_args[*]}"
    [[ -z $ldflags_kind ]] || declare -f "ldflags_$ldflags_kind"
  done
  cat "$REF/commits.txt"
  if [[ $1 == schemathesis ]]; then
    printf '%s\n' "$PY_ENV"
    cat "$REF/schemathesis/requirements.txt"
  else
    printf '%s\n' "$GO_ENV"
    cat "$REF/$1/go.mod" "$REF/$1/go.sum"
  fi
}
ALL_GROUPS=(kubernetes etcd coreos cluster-api matchbox schemathesis "${KUBEADM_GROUPS[@]}")
declare -A PART
for group in "${ALL_GROUPS[@]}"; do
  PART[$group]=$group-$(group_inputs "$group" | sha)
done
KEY=$(for group in "${ALL_GROUPS[@]}"; do printf '%s\n' "${PART[$group]}"; done | sha)
BIN=$CACHE/$KEY/bin

complete() { # are all of WANT in $BIN?
  local t
  for t in "${WANT[@]}"; do [[ -x $BIN/$t ]] || return 1; done
}

if ((PRINT)); then
  printf '%s\n' "$BIN"
  complete && exit 0 || exit 1
fi

# ---------------------------------------------------------------------------------------
mkdir -p "$CACHE/parts" "$BIN"
if command -v flock >/dev/null; then
  exec 9>"$CACHE/.lock"
  flock -n 9 || { log "waiting for another tools.sh on $CACHE"; flock 9; }
fi
TMP=
trap '[[ -z $TMP ]] || rm -rf -- "$TMP"' EXIT
rm -rf -- "$CACHE"/parts/*/.tmp-* # an interrupted run's leftovers (we hold the lock)

now() { printf '%s' "$EPOCHREALTIME"; }
took() { # took START -> "3m07s (187.2 s)"
  local s
  s=$(awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
  awk -v s="$s" 'BEGIN { printf "%dm%02ds (%s s)", int(s / 60), int(s) % 60, s }'
}

# The symlinks of $BIN, made first, so that whatever is built is found at once.
link() { # link TOOL
  local group of target
  tool_params "$1"
  target=../../parts/${PART[$group]}/bin/${of:-$1}
  [[ $(readlink "$BIN/$1" 2>/dev/null) == "$target" ]] && return
  ln -s "$target" "$BIN/.tmp-$1" && mv -T "$BIN/.tmp-$1" "$BIN/$1"
}
for t in "${ALL_TOOLS[@]}"; do link "$t"; done
ln -s "$KEY" "$CACHE/.tmp-current" && mv -T "$CACHE/.tmp-current" "$CACHE/current"

have_blkid() { printf '#include <blkid/blkid.h>\n' | "${CC:-cc}" -E -x c - >/dev/null 2>&1; }

declare -A DOWNLOADED
FAILED=()
SUMMARY=()

build_go() { # build_go TOOL
  local tool=$1 group of pkg cgo buildmode tags ldflags_base ldflags_kind version_args
  tool_params "$tool"
  if [[ -n $of ]]; then build_go "$of"; return 0; fi
  local dir=$CACHE/parts/${PART[$group]}
  [[ -x $dir/bin/$tool ]] && return 0
  if ((cgo)) && [[ $tool == ignition ]] && ! have_blkid; then
    if ((APT)); then
      log "installing libblkid-dev (ignition's cgo needs <blkid/blkid.h>)"
      apt-get install -y libblkid-dev >&2 || { apt-get update >&2 && apt-get install -y libblkid-dev >&2; }
    fi
    have_blkid || { log "ignition: NOT built: its cgo needs libblkid's headers (apt-get install -y libblkid-dev, or rerun with --apt)"; FAILED+=("$tool"); return 0; }
  fi
  mkdir -p "$dir/bin"
  if [[ -z ${DOWNLOADED[$group]:-} ]]; then
    local t0
    t0=$(now)
    log "downloading the $group modules (tools/reference/$group/go.sum)"
    (cd "$REF/$group" && go mod download)
    DOWNLOADED[$group]=1
    log "downloaded the $group modules in $(took "$t0")"
    SUMMARY+=("modules:$group $(took "$t0")")
  fi
  local ld flags
  ld=$("ldflags_$ldflags_kind" "$group")
  flags=(-o "$dir/.tmp-$tool/$tool" -ldflags "$ldflags_base$ld")
  [[ -n $tags ]] && flags+=(-tags "$tags")
  [[ -n $buildmode ]] && flags+=(-buildmode "$buildmode")
  TMP=$dir/.tmp-$tool
  rm -rf -- "$TMP" && mkdir -p "$TMP"
  log "building $tool ($pkg, CGO_ENABLED=$cgo)"
  local t0 out
  t0=$(now)
  if ! (cd "$REF/$group" && CGO_ENABLED=$cgo go build "${flags[@]}" "$pkg"); then
    log "$tool: build FAILED after $(took "$t0")"
    FAILED+=("$tool")
    rm -rf -- "$TMP" && TMP=''
    return 0
  fi
  if ! out=$("$TMP/$tool" "${version_args[@]}" 2>&1); then
    log "$tool: built in $(took "$t0"), but '$tool ${version_args[*]}' failed: $out"
    FAILED+=("$tool")
    rm -rf -- "$TMP" && TMP=''
    return 0
  fi
  mv -f "$TMP/$tool" "$dir/bin/$tool"
  rm -rf -- "$TMP" && TMP=''
  log "built $tool in $(took "$t0"): $(head -n1 <<<"$out")"
  SUMMARY+=("$tool $(took "$t0")")
}

build_schemathesis() {
  local group of pkg cgo buildmode tags ldflags_base ldflags_kind version_args
  tool_params schemathesis
  local dir=$CACHE/parts/${PART[schemathesis]}
  [[ -x $dir/bin/schemathesis ]] && return 0
  [[ -n $PYTHON ]] || { log "schemathesis: NOT built: python3 not found"; FAILED+=(schemathesis); return 0; }
  local t0 out
  t0=$(now)
  log "installing schemathesis (tools/reference/schemathesis/requirements.txt) into $dir/venv"
  # A venv can't be moved, so it is built in place; bin/schemathesis, made last, says it's good.
  rm -rf -- "$dir/venv" && mkdir -p "$dir/bin"
  if ! { "$PYTHON" -m venv "$dir/venv" &&
    "$dir/venv/bin/python" -m pip install --disable-pip-version-check --no-input -q \
      --no-deps -r "$REF/schemathesis/requirements.txt" >&2 &&
    "$dir/venv/bin/python" -m pip check --disable-pip-version-check >&2 &&
    out=$("$dir/venv/bin/schemathesis" "${version_args[@]}" 2>&1); }; then
    log "schemathesis: install FAILED after $(took "$t0")"
    FAILED+=(schemathesis)
    return 0
  fi
  ln -sfn ../venv/bin/schemathesis "$dir/bin/.tmp-schemathesis" && mv -T "$dir/bin/.tmp-schemathesis" "$dir/bin/schemathesis"
  log "installed schemathesis in $(took "$t0"): $out"
  SUMMARY+=("schemathesis $(took "$t0")")
}

T_ALL=$(now)
for t in "${WANT[@]}"; do
  if [[ $t == schemathesis ]]; then build_schemathesis; else build_go "$t"; fi
done
if ((${#SUMMARY[@]})); then
  log "timings:"
  for s in "${SUMMARY[@]}"; do log "  $s"; done
fi
log "total $(took "$T_ALL")"

if ((PRUNE)); then
  keep=" parts current $KEY "
  for group in "${ALL_GROUPS[@]}"; do keep+="parts/${PART[$group]} "; done
  for d in "$CACHE"/*/ "$CACHE"/parts/*/; do
    d=${d%/}
    [[ $keep == *" ${d#"$CACHE"/} "* ]] || { log "pruning $d"; rm -rf -- "$d"; }
  done
fi

printf '%s\n' "$BIN"
if ((${#FAILED[@]})); then
  log "NOT built: ${FAILED[*]}"
  exit 1
fi
complete || { log "incomplete: $BIN lacks some of ${WANT[*]}"; exit 1; }
