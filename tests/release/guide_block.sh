#!/usr/bin/env bash
# Prints the commands of one marked block of a guide, as the guide prints them:
#   tests/release/guide_block.sh docs/admin-guide.md enable
# prints the lines of the fenced block that follows "<!-- first-hour: enable -->", so that a
# test runs the guide's own text (deb_check.sh), never a copy of it. Exit 1 when the marker
# or its block is missing.
set -euo pipefail
file=${1:?usage: guide_block.sh FILE NAME} name=${2:?usage: guide_block.sh FILE NAME}
awk -v marker="<!-- first-hour: $name -->" '
    $0 == marker { armed = 1; next }
    armed == 1 && /^```/ { armed = 2; next }
    armed == 2 && /^```/ { found = 1; exit }
    armed == 2 { print }
    END { exit found ? 0 : 1 }
' "$file" || { echo "guide_block.sh: no block '$name' in $file" >&2; exit 1; }
