// Package contracttest validates real HTTP responses against a served
// OpenAPI contract document, for the tests of packages that mount routes
// on the REST server and describe them in fragments.
package contracttest
