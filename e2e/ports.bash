# shellcheck shell=bash
# Loopback ports for the e2e servers (registry, fault registry, policy-server).
#
#   source e2e/ports.bash
#   port_busy PORT   # true when something listens on 127.0.0.1:PORT
#   free_port        # prints a random 127.0.0.1 port nothing listens on (fails after 50 tries)

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
