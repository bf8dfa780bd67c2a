// Package deploy holds what an operator installs beside the binary, and the tests that keep it
// true: the Prometheus alerting rules (prometheus/palaver-rules.yml), the Grafana dashboard
// (grafana/palaver-dashboard.json) and the Debian package's files (debian/). The test here checks
// that the rules and the dashboard name only metrics a running cluster exports; the module
// deploy/rulescheck loads them with Prometheus' own parsers. docs/operations.md explains them.
package deploy
