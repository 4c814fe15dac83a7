# Whole-program workload: gawk on generated text (run as gawk -v N=... -f words.awk). Builds
# word counts and an index of positions in associative arrays, joins and splits strings, sorts
# with asorti, drops the arrays and starts again; prints a checksum that is the same under every
# allocator.
BEGIN {
  n = N ? N : 200000
  checksum = 0
  for (round = 0; round < 4; ++round) {
    for (i = 0; i < n; ++i) {
      word = "w" (i * 7919 % 10007) "-" (i % 13)
      count[word]++
      where[word] = where[word] " " i
      line = line word (i % 16 ? " " : "\n")
      if (i % 64 == 63) {
        fields = split(line, parts, /[ \n]+/)
        checksum += fields + length(parts[1])
        text[i] = line
        line = ""
      }
    }
    keys = asorti(count, sorted)
    for (k = 1; k <= keys; k += 97) checksum += count[sorted[k]] + length(where[sorted[k]])
    for (t in text) checksum += gsub(/w1/, "W1", text[t])
    checksum = checksum % 2305843009213693951
    delete count
    delete where
    delete text
    delete sorted
  }
  print "gawk checksum", checksum
}
