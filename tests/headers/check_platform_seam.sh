#!/usr/bin/env bash
# Three files hold all that is platform-specific (docs/toolkit.md, Platforms): no toolkit header but
# detail/address_range.hpp, detail/error_output.hpp and detail/malloc_tags.hpp tests for an
# operating system or includes or calls its interfaces.
#   check_platform_seam.sh INCLUDE_DIR
set -euo pipefail
cd "$1/poolalloc"
seams=(detail/address_range.hpp detail/error_output.hpp detail/malloc_tags.hpp)
platform='_WIN32|_WIN64|__linux__|__unix__|__APPLE__|__MINGW|_MSC_VER|<unistd\.h>|<windows\.h>|<io\.h>|<pthread\.h>|<dlfcn\.h>|<sys/|\bssize_t\b|STDERR_FILENO|::write\(|_write\(|dlsym|gnu::weak'
found=$(grep -nE "$platform" --include='*.hpp' -r . | grep -vE "^\./($(IFS='|'; echo "${seams[*]}")):" || true)
if [[ -n $found ]]; then
  echo "platform-specific code outside ${seams[*]}:" >&2
  echo "$found" >&2
  exit 1
fi
for seam in "${seams[@]}"; do
  grep -qE "$platform" "$seam" || { echo "$seam holds nothing platform-specific: the pattern is stale" >&2; exit 1; }
done
echo "only ${seams[*]} are platform-specific"
