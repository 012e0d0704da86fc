package versiondiff

import (
	"fmt"
	"strings"
)

// Markdown renders rows as the generated part of the manual's differences page
// (docs/differences.md): an index, then one section per row. The page's test compares the
// committed page with this, so the manual says what the differential tests accept.
func Markdown(rows []Row) string {
	var b strings.Builder
	b.WriteString("| row | where zkd, ZooKeeper 3.8.0 and 3.9 answer differently |\n| --- | --- |\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| [%s](#%s) | %s |\n", r.ID, anchor(r.ID), cell(r.What))
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "\n### %s\n\n", r.ID)
		if u := link(r.ID); u != "" {
			fmt.Fprintf(&b, "%s. ", u)
		}
		fmt.Fprintf(&b, "**When:** %s.\n\n", text(r.What))
		b.WriteString("| server | answers |\n| --- | --- |\n")
		fmt.Fprintf(&b, "| ZooKeeper 3.8.0 | %s |\n", cell(r.ZK380))
		fmt.Fprintf(&b, "| ZooKeeper 3.9 | %s |\n", cell(r.ZK39))
		fmt.Fprintf(&b, "| zkd | %s |\n", cell(r.Zkd))
		fmt.Fprintf(&b, "\n**Why:** %s.\n", text(r.Why))
	}
	return b.String()
}

// link is where a row's id is explained: ZooKeeper's JIRA, the CVE record; "" for zkd's own.
func link(id string) string {
	switch {
	case strings.HasPrefix(id, "ZOOKEEPER-"):
		return fmt.Sprintf("[%s](https://issues.apache.org/jira/browse/%s)", id, id)
	case strings.HasPrefix(id, "CVE-"):
		return fmt.Sprintf("[%s](https://www.cve.org/CVERecord?id=%s)", id, id)
	}
	return ""
}

// anchor is the id GitHub gives the heading "### id".
func anchor(id string) string { return strings.ToLower(id) }

// text escapes what Markdown would read as markup in a field written as plain text: `*`
// pairs (zookeeper.* ... ssl.*) would turn the words between them italic, `<` starts HTML.
func text(s string) string {
	return strings.NewReplacer(`*`, `\*`, `<`, `\<`).Replace(s)
}

// cell is text in a table cell, where `|` would end the cell.
func cell(s string) string { return strings.ReplaceAll(text(s), "|", `\|`) }
