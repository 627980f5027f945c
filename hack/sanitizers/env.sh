# Sourced by hack/test.sh and hack/fuzz.sh: sanitizer run-time options for BERTH_SANITIZE builds.
# Stop at the first error with a full stack; leaks are errors (LeakSanitizer, part of ASan), except
# for the documented suppressions in lsan-suppressions.txt.
_berth_sanitizers="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$_berth_sanitizers/lsan-suppressions.txt:print_suppressions=0}"
unset _berth_sanitizers
