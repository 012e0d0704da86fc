// Package docs is zkd's manual: the Markdown pages in this directory. It holds no code; its
// tests keep the pages true: the commands the pages mark runnable are run against a real zkd
// (doc_test.go), the differences page is compared with internal/versiondiff's table
// (differences_test.go), and every relative link must lead somewhere (links_test.go).
package docs
