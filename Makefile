# sonde — GNU make build. Out-of-tree objects in $(BUILD)/.
#   make            build build/bin/{sonde,sonde-cc,sonde-c++,sonde-config} and the runtime
#   make check      run unit + end-to-end tests (ends with "N passed, N failed")
#   make demo       build and profile the bundled example
#   make bench      benchmarks (ratios, never pass/fail)
#   make deps       install the Debian build dependencies (root)
#   make SAN=1 BUILD=build-san check   the same tests with ASan+UBSan on the host tools
#
# Sources are found by wildcard: a new file in a folder is built without editing this file.

BUILD   ?= build
CC      ?= cc
WERROR  ?=
OPT     ?= -O2
CFLAGS_COMMON := -std=gnu11 -Wall -Wextra $(WERROR) -g $(OPT) -Iinclude -Isrc -D_GNU_SOURCE
ifeq ($(SAN),1)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif
# Host tools (sonde, sonde-cc): may be sanitized.
HOST_CFLAGS := $(CFLAGS_COMMON) $(SANFLAGS)
# Code injected into profiled programs: never instrumented, never sanitized, hidden symbols.
RT_CFLAGS := $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -fno-builtin -fno-stack-protector \
             -fno-omit-frame-pointer -ftls-model=initial-exec -fno-instrument-functions

DEP_LIBS := -lelf -ldw -lcapstone -lz -lstdc++ -lm -lpthread -ldl

HOST_SRCS := $(wildcard src/cli/*.c src/common/*.c src/record/*.c src/data/*.c src/sym/*.c \
                        src/analysis/*.c src/export/*.c src/probe/*.c src/arch/x86_64/*.c \
                        src/attach/*.c)
HOST_OBJS := $(HOST_SRCS:%.c=$(BUILD)/obj/%.o)
# Everything but the CLI: linked into unit tests too.
LIB_OBJS  := $(filter-out $(BUILD)/obj/src/cli/%,$(HOST_OBJS))

RT_SRCS   := $(filter-out src/rt/module.c,$(wildcard src/rt/*.c)) src/common/clock.c src/common/ring.c
RT_OBJS   := $(RT_SRCS:%.c=$(BUILD)/rtobj/%.o)

BINS := $(BUILD)/bin/sonde $(BUILD)/bin/sonde-cc $(BUILD)/bin/sonde-c++ $(BUILD)/bin/sonde-config
LIBS := $(BUILD)/lib/sonde/libsonde-rt.so $(BUILD)/lib/sonde/sonde-module.o $(BUILD)/lib/pkgconfig/sonde.pc \
        $(BUILD)/lib/sonde/as/as

.PHONY: all check demo bench deps clean unit e2e
all: deps-check $(BINS) $(LIBS)

deps-check:
	@sh tools/check-deps.sh

deps:
	@sh tools/check-deps.sh --install

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/rtobj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(RT_CFLAGS) $(RT_EXTRA) -MMD -MP -c $< -o $@

# Code the trampolines reach leaves vector and x87 registers alone (they hold
# the instrumented function's arguments and return values).
$(BUILD)/rtobj/src/rt/hooks.o $(BUILD)/rtobj/src/common/ring.o $(BUILD)/rtobj/src/rt/unwind.o: RT_EXTRA := -mgeneral-regs-only

$(BUILD)/bin/sonde: $(HOST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) -o $@ $^ $(DEP_LIBS)

$(BUILD)/bin/sonde-cc: $(BUILD)/obj/src/cc/sonde-cc.o
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) -o $@ $^

# The assembler filter gcc finds through sonde-cc's -B (see src/cc/sonde-as.c).
$(BUILD)/lib/sonde/as/as: $(BUILD)/obj/src/cc/sonde-as.o
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) -o $@ $^

$(BUILD)/bin/sonde-c++: $(BUILD)/bin/sonde-cc
	ln -sf sonde-cc $@

$(BUILD)/bin/sonde-config: tools/sonde-config.in
	@mkdir -p $(dir $@)
	cp $< $@ && chmod +x $@

$(BUILD)/lib/pkgconfig/sonde.pc: tools/sonde.pc.in
	@mkdir -p $(dir $@)
	sed 's|@LIBDIR@|$(abspath $(BUILD))/lib/sonde|' $< > $@

$(BUILD)/lib/sonde/libsonde-rt.so: $(RT_OBJS) src/rt/runtime.map
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(RT_OBJS) -Wl,--version-script=src/rt/runtime.map -Wl,-z,now -ldl -lpthread

# The module object: hooks + numbering constructor, linked into every instrumented module.
$(BUILD)/lib/sonde/sonde-module.o: src/rt/module.c
	@mkdir -p $(dir $@)
	$(CC) $(RT_CFLAGS) -MMD -MP -c $< -o $@

# ---- tests ----
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)

$(BUILD)/tests/unit/%: tests/unit/%.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -Itests -o $@ $< $(LIB_OBJS) $(DEP_LIBS)

# Tools that tests drive (not installed).
TOOL_SRCS := $(wildcard tests/tools/*.c)
TOOL_BINS := $(TOOL_SRCS:tests/tools/%.c=$(BUILD)/tests/tools/%)

$(BUILD)/tests/tools/%: tests/tools/%.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $< $(LIB_OBJS) $(DEP_LIBS)

check: all $(UNIT_BINS) $(TOOL_BINS)
	@BUILD=$(abspath $(BUILD)) bash tests/run.sh

demo: all
	@BUILD=$(abspath $(BUILD)) bash tools/demo.sh

bench: all
	@BUILD=$(abspath $(BUILD)) bash bench/run.sh

clean:
	rm -rf $(BUILD) build-san

-include $(shell find $(BUILD)/obj $(BUILD)/rtobj $(BUILD)/lib -name '*.d' -type f 2>/dev/null)

# ---- fuzzing ----
# make fuzz BUILD=build-fuzz: the libFuzzer harness of the recording readers,
# $(BUILD)/fuzz/fuzz_reader (tests/fuzz/fuzz_reader.c, docs/FUZZING.md).  The
# host objects but src/cli/main.c are rebuilt with clang, libFuzzer's
# coverage, ASan and UBSan into $(BUILD)/fuzzobj/.  exit() is renamed so that
# the harness gets the commands' exits back; sym_open is wrapped so that the
# harness does not open the files a mutated recording names.
FUZZ_CC     ?= clang
FUZZ_SAN    := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=gnu11 -g -O1 -Iinclude -Isrc -D_GNU_SOURCE -Dexit=sonde_fuzz_exit $(FUZZ_SAN)
FUZZ_SRCS   := $(filter-out src/cli/main.c,$(HOST_SRCS))
FUZZ_OBJS   := $(FUZZ_SRCS:%.c=$(BUILD)/fuzzobj/%.o)

$(BUILD)/fuzzobj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/fuzz/fuzz_reader: tests/fuzz/fuzz_reader.c $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Wl,--wrap=sym_open -MMD -MP -MF $@.d -o $@ $< $(FUZZ_OBJS) $(DEP_LIBS)

.PHONY: fuzz
fuzz: $(BUILD)/fuzz/fuzz_reader

-include $(shell find $(BUILD)/fuzzobj $(BUILD)/fuzz -name '*.d' -type f 2>/dev/null)
