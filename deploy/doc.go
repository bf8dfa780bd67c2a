// Package deploy holds what an operator installs beside the binary, and the tests that keep it
// true: the Prometheus alerting rules (prometheus/palaver-rules.yml), the Grafana dashboard
// (grafana/palaver-dashboard.json) and the Debian package's files (debian/). The test here checks
// that the rules and the dashboard name only metrics a running cluster exports where operators
// scrape it, on the --pprof-addr listener (the public /metrics leaves out the series that compare
// nodes); the module deploy/rulescheck loads them with Prometheus' own parsers.
// docs/operations.md explains them.
package deploy
