// Package rulescheck loads deploy/prometheus/palaver-rules.yml with Prometheus' own rule parser
// (github.com/prometheus/prometheus/model/rulefmt) and every query of the rules and of
// deploy/grafana/palaver-dashboard.json with its query parser. It is a module of its own so that
// Prometheus' dependencies stay out of Palaver's go.mod; `make test` runs it.
package rulescheck
