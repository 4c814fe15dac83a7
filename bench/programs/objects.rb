# Whole-program workload: object-heavy Ruby. Builds and drops hashes, arrays, strings and
# instances of a struct, sorts, joins and counts, as bench/programs/objects.py does; prints a
# checksum that is the same under every allocator. Usage: ruby objects.rb N
Node = Struct.new(:key, :value, :children)

def build_tree(n)
  nodes = Array.new(n) { |i| Node.new(i, i.to_s * (i % 5 + 1), []) }
  (1...n).each { |i| nodes[(i - 1) / 4].children << nodes[i] }
  nodes[0]
end

def walk(node)
  total = 0
  stack = [node]
  until stack.empty?
    current = stack.pop
    total += current.key + current.value.length
    stack.concat(current.children)
  end
  total
end

n = (ARGV[0] || 200_000).to_i
checksum = 0
4.times do |round|
  table = {}
  n.times { |i| table["key-#{i}-#{round}"] = [i, i.to_s, [i, i * 2]] }
  checksum += table.values.sum { |v| v[1].length }
  words = table.keys.map(&:reverse).sort
  checksum += words.each_slice([1, n / 1000].max).map(&:first).join(",").length
  table = words = nil
  checksum += walk(build_tree(n / 2))
  counts = Hash.new(0)
  n.times { |i| counts["w#{i % 997}"] += 1 }
  checksum += counts.size + counts.values.max
  checksum += Array.new(n) { |i| Array.new(i % 16) { |j| j } }.sum(&:length)
end
puts "ruby checksum #{checksum % (1 << 61)}"
