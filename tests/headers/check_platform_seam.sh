#!/usr/bin/env bash
# One file holds all that is platform-specific (docs/toolkit.md, Platforms): no toolkit header but
# detail/error_output.hpp tests for an operating system or includes or calls its interfaces.
#   check_platform_seam.sh INCLUDE_DIR
set -euo pipefail
cd "$1/poolalloc"
seam=detail/error_output.hpp
platform='_WIN32|_WIN64|__linux__|__unix__|__APPLE__|__MINGW|_MSC_VER|<unistd\.h>|<windows\.h>|<io\.h>|<pthread\.h>|<sys/|\bssize_t\b|STDERR_FILENO|::write\(|_write\('
found=$(grep -nE "$platform" --include='*.hpp' -r . | grep -v "^\./$seam:" || true)
if [[ -n $found ]]; then
  echo "platform-specific code outside $seam:" >&2
  echo "$found" >&2
  exit 1
fi
grep -qE "$platform" "$seam" || { echo "$seam holds nothing platform-specific: the pattern is stale" >&2; exit 1; }
echo "only $seam is platform-specific"
