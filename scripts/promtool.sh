#!/usr/bin/env bash
# Makes sure promtool (Debian package prometheus) is installed: the test suite checks the alert
# rules in ops/prometheus with `promtool check rules`, and scripts/topology.sh can start a
# Prometheus.
exec bash "$(dirname "$0")/debian-command.sh" promtool prometheus
