package cites

// Issue 17 item 1: a test named by an item of the tracker.
//
// A rule (issue 15, item 8) cited by number in a paragraph; the
// issues 15 and 16 together;
// issue #9;
// issue-12;
// turn-1.
// Not citations: an issued key, issue_areas, ldaIssues, issues/123 of
// another project, "the issue" with no number, docs/design.md D8.

const report = "Targets (issue 2):"

/* a block comment: issue 20 */

var issued, issueAreas = 1, "issue_area=HCR"
