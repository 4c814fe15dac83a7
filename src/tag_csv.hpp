// The memory tags' CSV (POOLALLOC_TAG_CSV=path): every POOLALLOC_TAG_CSV_MS milliseconds (1000 by
// default) a line with the time and each registered tag's live bytes, for a spreadsheet or a
// plot of what each subsystem holds over a run (as Unreal's -LLMCSV writes its tags).
//
// Who writes: a thread of the library's, "poolalloc-csv", started by the library's constructor
// only when the option is set, so that a program that idles still gets its lines (a writer driven
// by the slow paths' looks at the clock would fall silent with the program's allocations). It
// sleeps between lines, runs with every signal blocked, and writes each line (with the header
// before it, when one is due) in one write(2), from memory mapped at start for the longest line,
// nothing allocated through malloc. Without the option: no thread, no descriptor. With it, the
// process has one more thread from its start (so the decay thread runs as in any threaded
// program).
//
// The file: "%p" in the path is replaced by the process id; it is created, or emptied, when the
// library starts, then closed. Each line opens it (O_APPEND) and closes it: a descriptor held
// between lines could be closed by the program (daemons close what they did not open) and its
// number reused for a file of the program's, which would then get the lines. Lines:
//   ms,untagged,AI,Render        a header: the tags registered so far, in id order
//   0,1048576,0,0                the milliseconds since the file was opened, each tag's live bytes
// Tags registered later add columns at the end: a new header line is written before the first
// line that has them. A name with a comma, a quote or a line break is quoted as CSV quotes. At
// exit the process writes one last line. A child of fork() writes nothing (the thread stayed in
// the parent).
#pragma once

namespace poolalloc::internal {

// From start_up: creates or empties the file and starts the thread when POOLALLOC_TAG_CSV is set.
// A file that cannot be opened, or a thread that cannot be created, is said in one line on stderr;
// so is the first line that cannot be written.
void start_tag_csv();

// At exit, in the process that opened the file: the last line.
void write_tag_csv_at_exit();

}  // namespace poolalloc::internal
