#!/usr/bin/env bash
# `make check-manifests` (part of `make check` and `make lint`): the ClusterAdmissionPolicies users
# copy agree with metadata.yml, their one source:
#
# - the rules (kinds and operations routed to the policy) of README.md's policy ("## Install with
#   Kubewarden"), of docs/node-aware.md's ("## Install") and of examples/cluster-admission-policy.yaml
#   (generated from metadata.yml by `make cluster-admission-policy`) are metadata.yml's `rules`;
# - `mutating` is metadata.yml's in all three;
# - docs/node-aware.md's policy is README.md's but for `settings` and what reading Nodes adds:
#   `backgroundAudit` (metadata.yml's) and `contextAwareResources` (a subset of metadata.yml's).
#
# Prints one line when they agree; otherwise each disagreement, on stderr, and fails.
#   bash scripts/check-manifests.sh [ROOT]   # default: the repository
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

# doc_block FILE HEADING_REGEX: the first ``` block after the first line of FILE matching the regex
# (as e2e/requests.bash reads the blocks the suites run).
doc_block() {
  awk -v re="$2" 'f == 0 && $0 ~ re {f = 1; next} f == 1 && /^```/ {f = 2; next} f == 2 && /^```/ {exit} f == 2' "$1"
}

# clean: comments and blank lines dropped, trailing blanks cut.
clean() {
  sed -e 's/^\([^#]*[^ #]\)\{0,1\} *#.*$/\1/' -e 's/ *$//' | grep -v '^$' || true
}

# section KEY INDENT: the line `KEY:` at INDENT spaces and the lines under it, de-indented by INDENT.
section() {
  awk -v key="$1" -v n="$2" '
    { match($0, /^ */); indent = RLENGTH }
    f && indent <= n && $0 !~ "^ *- " { f = 0 }
    f && indent < n { f = 0 }
    !f && indent == n && substr($0, n + 1, length(key) + 1) == key ":" { f = 1 }
    f { print substr($0, n + 1) }'
}

# without INDENT KEY...: the text without the sections of the keys KEY at INDENT spaces.
without() {
  local n=$1
  shift
  awk -v n="$n" -v keys=" $* " '
    { match($0, /^ */); indent = RLENGTH }
    indent < n { skip = 0 }
    indent == n && $0 !~ /^ *- / { k = substr($0, n + 1); sub(/:.*/, "", k); skip = index(keys, " " k " ") > 0 }
    !skip'
}

# rules: a `rules:` section, flow or block style, as one line per rule:
# apiGroups=...;apiVersions=...;resources=...;operations=... (values unquoted, comma-separated).
rules() {
  awk '
    function flush() { if (n) print "apiGroups=" v["apiGroups"] ";apiVersions=" v["apiVersions"] ";resources=" v["resources"] ";operations=" v["operations"]; delete v }
    function add(key, value) { gsub(/^[ "'"'"']+|[ "'"'"']+$/, "", value); if (key in v) v[key] = v[key] "," value; else v[key] = value }
    /^ *rules:/ { next }
    {
      line = $0
      if (line ~ /^ *- [A-Za-z]+:/) { flush(); n++; sub(/- /, "", line) }
      if (line ~ /^ *[A-Za-z]+:/) {
        key = line; sub(/^ +/, "", key); sub(/:.*/, "", key)
        rest = line; sub(/^[^:]*: */, "", rest)
        current = key
        if (rest ~ /^\[/) {
          gsub(/^\[|\]$/, "", rest)
          count = split(rest, items, ",")
          for (i = 1; i <= count; i++) add(key, items[i])
        }
        next
      }
      if (line ~ /^ *- /) { sub(/^ *- /, "", line); add(current, line) }
    }
    END { flush() }'
}

problems=()
# same WHAT WANT GOT: GOT must be WANT; otherwise WHAT and the lines that differ.
same() {
  [ "$2" = "$3" ] && return
  problems+=("$1:")
  local line
  while IFS= read -r line; do
    problems+=("  $line")
  done < <(diff <(echo "$2") <(echo "$3") | grep '^[<>]' || true)
}

readme=$(doc_block README.md '^## Install with Kubewarden' | clean)
node_aware=$(doc_block docs/node-aware.md '^## Install$' | clean)
example=$(clean <examples/cluster-admission-policy.yaml)
metadata=$(clean <metadata.yml)
[ -n "$readme" ] || problems+=("README.md has no policy under \"## Install with Kubewarden\"")
[ -n "$node_aware" ] || problems+=("docs/node-aware.md has no policy under \"## Install\"")

spec() { echo "$1" | section spec 0; }
want_rules=$(echo "$metadata" | section rules 0 | rules)
[ -n "$want_rules" ] || problems+=("metadata.yml has no rules")
for name in README.md docs/node-aware.md examples/cluster-admission-policy.yaml; do
  case $name in
    README.md) text=$readme ;;
    docs/node-aware.md) text=$node_aware ;;
    *) text=$example ;;
  esac
  same "$name's rules (< metadata.yml's, > its own)" "$want_rules" \
    "$(spec "$text" | section rules 2 | rules)"
  same "$name's mutating (< metadata.yml's, > its own)" \
    "$(echo "$metadata" | sed -n 's/^mutating: //p')" "$(spec "$text" | sed -n 's/^  mutating: //p')"
done

same "docs/node-aware.md's policy but settings, backgroundAudit and contextAwareResources (< README.md's, > its own)" \
  "$(echo "$readme" | without 0 spec; spec "$readme" | without 2 settings)" \
  "$(echo "$node_aware" | without 0 spec; spec "$node_aware" | without 2 settings backgroundAudit contextAwareResources)"
same "docs/node-aware.md's backgroundAudit (< metadata.yml's, > its own)" \
  "$(echo "$metadata" | sed -n 's/^backgroundAudit: //p')" "$(spec "$node_aware" | sed -n 's/^  backgroundAudit: //p')"
# items: a list of two-key mappings (`- apiVersion: v1` / `kind: Node`), one line each, sorted.
items() { tail -n +2 | sed 's/^ *- *//; s/^ *//' | paste -d' ' - - | sort; }
resources=$(spec "$node_aware" | section contextAwareResources 2 | items)
declared=$(echo "$metadata" | section contextAwareResources 0 | items)
missing=$(comm -23 <(echo "$resources") <(echo "$declared"))
[ -z "$resources" ] && problems+=("docs/node-aware.md's policy lists no contextAwareResources")
[ -z "$missing" ] || problems+=("docs/node-aware.md's contextAwareResources that metadata.yml does not declare: $missing")

if ((${#problems[@]})); then
  echo "manifests disagree with metadata.yml:" >&2
  printf '  %s\n' "${problems[@]}" >&2
  exit 1
fi
echo "check-manifests: README.md, docs/node-aware.md and examples/cluster-admission-policy.yaml route metadata.yml's $(echo "$want_rules" | wc -l) rules"
