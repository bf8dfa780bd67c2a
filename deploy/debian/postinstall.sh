#!/bin/sh
# Tells systemd about the unit; the service is not started: configure it first, then
# systemctl enable --now palaver.
set -e
if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null || true
fi
