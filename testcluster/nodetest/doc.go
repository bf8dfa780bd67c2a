// Package nodetest starts real nodes for the tests of packages other than node (whose own tests
// keep startNode, as they cannot import a package that imports node): one node of
// node.LoopbackConfig with its data in the test's temporary directory, or a three-node cluster of
// them, closed when the test ends.
// Set PALAVER_TEST_LOG to see its debug log.
package nodetest
