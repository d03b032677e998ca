# Developer checks of the native code. The build itself is pip + CMake (pyproject.toml);
# these targets only rebuild the interposer with checks on and run the exact-I/O programs under it.
#   make asan       AddressSanitizer + UBSan build, every tests/native program run under it (the stdio ones
#                   also with --trace)
#   make valgrind   memcheck of the same programs with the release interposer, with and without --trace
#   make asan-bench AddressSanitizer + UBSan build of the bench engine, its tests run against it
BUILD ?= build/check
PROGS = rw_exact meta_exact stdio_exact stdio_modes stdio_runs stdio_mix dup_exact family threads vfork_exact fdcheck
CC ?= cc
# memcheck is started directly: `valgrind` is a dynamic launcher that execs the static tool, and the interposer,
# loaded into the launcher by LD_PRELOAD, passes a static program the environment it would have unprofiled
VG_LIB ?= $(or $(VALGRIND_LIB),/usr/libexec/valgrind)
VG_ARCH ?= $(if $(filter aarch64,$(shell uname -m)),arm64,amd64)

.PHONY: asan asan-bench valgrind clean-check

$(BUILD)/%: tests/native/%.c
	@mkdir -p $(BUILD)
	$(CC) -O0 -g -pthread -o $@ $<

asan: $(addprefix $(BUILD)/,$(PROGS))
	cmake -S . -B $(BUILD)/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DIOLENS_SANITIZE=ON >/dev/null
	ninja -C $(BUILD)/asan iolens_preload >/dev/null
	@rm -rf $(BUILD)/cap && mkdir -p $(BUILD)/cap $(BUILD)/work
	@set -e; for p in $(PROGS); do \
	  case $$p in rw_exact) args="$(BUILD)/work/f 64 4096";; threads) args="$(BUILD)/work 4 500";; \
	    vfork_exact) args="$(BUILD)/work/v /bin/echo";; fdcheck) args="list";; \
	    stdio_exact|dup_exact) args="$(BUILD)/work/f";; stdio_modes) args="$(BUILD)/work";; \
	    *) rm -rf $(BUILD)/work/sub; args="$(BUILD)/work";; esac; \
	  case $$p in stdio_*) modes="0 1";; *) modes=0;; esac; \
	  for t in $$modes; do \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	  LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $(CURDIR)/$(BUILD)/asan/native/libiolens_preload.so" \
	  IOLENS_DIR=$(CURDIR)/$(BUILD)/cap IOLENS_TRACE=$$t ./$(BUILD)/$$p $$args && rc=0 || rc=$$?; \
	  [ $$p = family ] && [ $$rc = 7 ] || [ $$rc = 0 ] || { echo "asan: $$p (trace $$t) failed ($$rc)"; exit 1; }; \
	  echo "asan: $$p (trace $$t) ok"; done; done

asan-bench:
	cmake -S . -B $(BUILD)/asan-bench -G Ninja -DCMAKE_BUILD_TYPE=Debug -DIOLENS_BENCH_SANITIZE=ON >/dev/null
	ninja -C $(BUILD)/asan-bench iolens-bench >/dev/null
	IOLENS_BENCH_ENGINE=$(CURDIR)/$(BUILD)/asan-bench/native/iolens-bench \
	  ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  .venv/bin/python -m pytest -p no:cacheprovider -q \
	  tests/test_bench_engine.py tests/test_bench_describe.py tests/test_bench_content.py

valgrind: $(addprefix $(BUILD)/,$(PROGS))
	cmake -S . -B $(BUILD)/rel -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	ninja -C $(BUILD)/rel iolens_preload >/dev/null
	@rm -rf $(BUILD)/cap && mkdir -p $(BUILD)/cap $(BUILD)/work
	@set -e; for p in rw_exact meta_exact stdio_exact stdio_modes stdio_runs stdio_mix dup_exact threads vfork_exact; do \
	  case $$p in rw_exact) args="$(BUILD)/work/f 64 4096";; threads) args="$(BUILD)/work 4 200";; \
	    vfork_exact) args="$(BUILD)/work/v /bin/echo";; \
	    stdio_exact|dup_exact) args="$(BUILD)/work/f";; stdio_modes) args="$(BUILD)/work";; \
	    *) rm -rf $(BUILD)/work/sub; args="$(BUILD)/work";; esac; \
	  for t in 0 1; do rm -rf $(BUILD)/cap/*; \
	  IOLENS_DIR=$(CURDIR)/$(BUILD)/cap IOLENS_TRACE=$$t LD_PRELOAD=$(CURDIR)/$(BUILD)/rel/native/libiolens_preload.so \
	    VALGRIND_LIB=$(VG_LIB) VALGRIND_LAUNCHER=$$(command -v valgrind) $(VG_LIB)/memcheck-$(VG_ARCH)-linux \
	    -q --error-exitcode=99 ./$(BUILD)/$$p $$args \
	    || { echo "valgrind: $$p (trace $$t) failed"; exit 1; }; \
	  test -n "$$(ls $(BUILD)/cap)" || { echo "valgrind: $$p (trace $$t): the interposer wrote no part"; exit 1; }; \
	  echo "valgrind: $$p (trace $$t) ok"; done; done

clean-check:
	rm -rf $(BUILD)
