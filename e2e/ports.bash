# shellcheck shell=bash
# Loopback ports and processes of the e2e servers (registry, fault registry, policy-server).
#
#   source e2e/ports.bash
#   port_busy PORT   # true when something listens on 127.0.0.1:PORT
#   free_port        # prints a random 127.0.0.1 port nothing listens on (fails after 50 tries)
#   stop_pid PID     # stops a server: TERM, up to 5 s to exit, then KILL; reaps it

port_busy() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

free_port() {
  local port _
  for _ in $(seq 1 50); do
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    if ! port_busy "$port"; then
      echo "$port"
      return 0
    fi
  done
  return 1
}

stop_pid() {
  local pid=$1 _
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
