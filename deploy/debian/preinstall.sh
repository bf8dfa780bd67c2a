#!/bin/sh
# Creates the system user the service runs as.
set -e
if ! getent passwd palaver >/dev/null; then
	adduser --system --group --home /var/lib/palaver --no-create-home --quiet palaver
fi
