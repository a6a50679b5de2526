# Baton: the two commands of the README, and a few more for developers.
#   make up     install what is missing, build the binaries (Release), run `baton up`
#   make test   install what is missing, build the ASan+UBSan configuration, run the suite
.PHONY: up test chaos build binaries asan bench fuzz golden quality deps format clean

FUZZ_SECONDS ?= 60
FUZZ_TARGETS := job_spec yaml quantity protocol trace network slurm

JOBS ?= $(shell nproc)
GEN := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
UP_ARGS ?=

deps:
	@scripts/install-deps

build/release/build.ninja build/release/Makefile:
	cmake -S . -B build/release $(GEN) -DCMAKE_BUILD_TYPE=Release

build/asan/build.ninja build/asan/Makefile:
	cmake -S . -B build/asan $(GEN) -DCMAKE_BUILD_TYPE=Debug -DBATON_SANITIZE=ON

# Everything in Release: the binaries, the tests and the benchmarks.
build: deps
	@[ -f build/release/CMakeCache.txt ] || cmake -S . -B build/release $(GEN) -DCMAKE_BUILD_TYPE=Release
	cmake --build build/release -j $(JOBS)

# What `baton up` runs and nothing else: baton, batond (with the dashboard) and baton-shim.
binaries: deps
	@[ -f build/release/CMakeCache.txt ] || cmake -S . -B build/release $(GEN) -DCMAKE_BUILD_TYPE=Release
	cmake --build build/release -j $(JOBS) --target baton

asan: deps
	@[ -f build/asan/CMakeCache.txt ] || cmake -S . -B build/asan $(GEN) -DCMAKE_BUILD_TYPE=Debug -DBATON_SANITIZE=ON
	cmake --build build/asan -j $(JOBS)

up: binaries
	./build/release/baton up $(UP_ARGS)

test: asan
	cd build/asan && ctest --output-on-failure -j 2 --timeout 900

# The fault suite alone (make test runs it too): stopped and cut-off agents, a leader stalled or
# cut off from PostgreSQL, a job printing without end, a full disk's reserve, lost and old store
# files, connection floods, kernel-enforced limits, two Unix users on one node. Each checks that
# nothing acknowledged is lost, nothing runs twice and no user reads another's data.
CHAOS := Fencing|Failover|Durability|OutputLimit|LostStore|HostileConnections|KernelLimits|MultiUser|Credentials
chaos: asan
	cd build/asan && ctest --output-on-failure -j 2 --timeout 900 -R '^($(CHAOS))\.'

bench: build
	./build/release/bench/baton_bench_sched
	@echo "load over HTTP against a running baton: build/release/bench/baton_load (docs/performance.md)"

# Rewrites the pinned decision logs of tests/golden after an intended change of the scheduler;
# review `git diff tests/golden` before committing.
golden: build
	BATON_UPDATE_GOLDEN=1 ./build/release/tests/baton_unit_tests --gtest_filter='Golden.*'

# Regenerates docs/scheduling-quality.md: every policy on the Philly and Alibaba traces
# (needs the traces: TRACES=path/to/traces, default ../shared/traces).
quality: build
	scripts/scheduling-quality $(TRACES)

# libFuzzer with clang: each target explores for FUZZ_SECONDS from its seed corpus; new inputs
# go to build/fuzz/corpus/TARGET (copy the interesting ones into tests/fuzz/corpus).
fuzz: deps
	@[ -f build/fuzz/CMakeCache.txt ] || CC=clang-14 CXX=clang++-14 cmake -S . -B build/fuzz $(GEN) -DCMAKE_BUILD_TYPE=Debug -DBATON_FUZZ=ON
	cmake --build build/fuzz -j $(JOBS) $(addprefix --target fuzz_,$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build/fuzz/corpus/$$t; \
	  ./build/fuzz/tests/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 build/fuzz/corpus/$$t tests/fuzz/corpus/$$t || exit 1; \
	done

format:
	clang-format -i $$(git ls-files 'src/*.h' 'src/*.cc' 'tests/*.cc' 'tests/*.h' 'bench/*.cc')

clean:
	rm -rf build
