# shellcheck shell=bash
# The host the e2e suites run the policy on, picked by one variable (sourced by every suite):
#
#   E2E_HOST=embedded (default)  the embedded host (`make host`: target/debug/embedded-host) on
#                                policy.wasm, whose metadata.yml it reads beside the module
#   E2E_HOST=kwctl               Kubewarden's kwctl (KWCTL, default .tools/bin/kwctl) on
#                                annotated-policy.wasm (`make annotated-policy.wasm`)
#
# Exports HOST_BIN (the `run` command line's program), POLICY and KWCTL. Both hosts take the same
# `run` command line. `needs_kwctl WHAT` skips a test that needs a kwctl-only command (annotate,
# inspect, bench, scaffold, push, pull) but on kwctl, saying why in one line.

E2E_HOST=${E2E_HOST:-embedded}
KWCTL=${KWCTL:-.tools/bin/kwctl}
case "$E2E_HOST" in
  embedded)
    HOST_BIN=${EMBEDDED_HOST:-target/debug/embedded-host}
    POLICY=${POLICY:-policy.wasm}
    ;;
  kwctl)
    HOST_BIN=$KWCTL
    POLICY=${POLICY:-annotated-policy.wasm}
    ;;
  *)
    echo "host.bash: E2E_HOST is embedded or kwctl, not $E2E_HOST" >&2
    return 1
    ;;
esac
export E2E_HOST HOST_BIN POLICY KWCTL

# on_kwctl: true when the suite runs on kwctl.
on_kwctl() {
  [ "$E2E_HOST" = kwctl ]
}

needs_kwctl() {
  [ -x "$KWCTL" ] || skip "needs kwctl $1: kwctl is not installed"
  on_kwctl || skip "kwctl $1: checked when the suite runs on kwctl (E2E_HOST=kwctl)"
}
