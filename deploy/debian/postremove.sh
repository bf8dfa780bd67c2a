#!/bin/sh
# Keeps /var/lib/palaver (the node's state) on remove and purge alike: delete it by hand.
set -e
if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null || true
fi
