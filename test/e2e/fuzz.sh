#!/usr/bin/env bash
# The fuzzers of the trace reader, the maps history parser and the stats parser, a short run each
# (test/fuzz/run.sh; `make fuzz` runs them longer).
FUZZ_SECONDS=${FUZZ_SECONDS:-8} exec bash "$(dirname "$0")/../fuzz/run.sh"
