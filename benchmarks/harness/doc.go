// Package harness is what every load generator in benchmarks/ shares to
// run its trials and report them: the order of the targets over the
// repeats (Order, Trials), the summary of a figure over the repeats
// (Spread), the machine and revision a run was made on (Host, Meta), and
// the writers of the results file (its header, verdict, Markdown tables
// and JSON). Each tool keeps its own load client and its own figures; what
// a report says and how it lays it out is written here once, so that
// "median [min–max]" or a failed run means the same in every report.
package harness
