# gputopo — topology-aware GPU job launch for Slurm.
#
#   make            build the library, the CLI, the SPANK plugin and the launcher
#   make deps       install the Debian packages the build needs (as root)
#   make test-deps  install the Debian packages the tests need (a Slurm cluster, Catch2, PyTorch, ...)
#   make check      install both when missing, build, run every test
#   make demo       install what is missing, start a local Slurm cluster, run an
#                   `srun --gpu-topo=island,verbose` job on shipped topologies
#   make check-unit unit tests only;  make SAN=1 check-unit  under ASan+UBSan
#   make bench      run the benchmarks under bench/
#   make golden     rewrite tests/fixtures/expected/ (the expected plans) from the planner
#   make fuzz       libFuzzer targets under fuzz/ (clang, ASan+UBSan) in build-fuzz/;
#                   make fuzz-run [FUZZ_SECONDS=25] runs each on its seed corpus
#   make install [PREFIX=/usr/local] [DESTDIR=]   make uninstall (same variables)
#   make deb / make rpm   a package for the Slurm release found (packaging/)
#
# Sources are found by directory:
#   topo/*/*.cpp      -> libgputopo.a (core model, sources, planner, fabric, output; no Slurm),
#                     but the real readers (READER_SRC: hwloc, libxml2) -> libgputopo-readers.a
#   step/*.cpp        -> libgputopo-step.a: the step binding shared by the plugin and the launcher
#   cli/*.cpp         -> gputopo (CLI)
#   spank/*.cpp       -> Slurm-free plugin logic (linked into tests too)
#   spank/glue/*.cpp  -> the SPANK entry points (include <slurm/spank.h>)
#   launcher/*.cpp launcher/*/*.cpp -> gputopo-launch (launcher/main.cpp holds main();
#                     one folder per phase: options, ranks, env, child, failure, requeue, state)
#   run/*.cpp         -> `gputopo run`, the job-level supervisor (in libgputopo-launch.a; cli/cmd_run calls it)
#   tests/unit/*.cpp  -> unit-tests (Catch2)
#   tests/fakes/nvml/*.cpp -> a fake libnvidia-ml.so.1 for tests
#   bench/*.cpp       -> one benchmark binary each
#   fuzz/fuzz_*.cpp   -> one libFuzzer target each (make fuzz)

CXX      ?= g++
BUILD    ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
SAN      ?=
# Debug information of the normal build: -g (default); CI builds with -g1 (line tables and
# function names, what a backtrace prints; about a third less compile time).
DEBUG_INFO ?= -g

PKGS     := hwloc libxml-2.0
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# A fresh machine without the headers: name the Debian packages instead of a compiler error
# (not for the goals that install them first: deps, check, demo).
ifeq ($(filter clean deps test-deps cluster-deps check demo,$(MAKECMDGOALS)),)
  MISSING_PKGS := $(strip $(if $(shell command -v pkg-config 2>/dev/null),,pkg-config) \
      $(if $(shell pkg-config --exists hwloc 2>/dev/null && echo y),,libhwloc-dev) \
      $(if $(shell pkg-config --exists libxml-2.0 2>/dev/null && echo y),,libxml2-dev))
  ifneq ($(MISSING_PKGS),)
    $(error gputopo: missing build dependencies: $(MISSING_PKGS) (run `make deps` as root, or apt-get install $(MISSING_PKGS)))
  endif
endif

WARN     := -Wall -Wextra -Werror -Wformat=2 -Wformat-security
HARDEN   := -fstack-protector-strong -fstack-clash-protection -fcf-protection -D_GLIBCXX_ASSERTIONS
ifeq ($(FUZZ),1)
  # make fuzz: clang + libFuzzer (Debian clang, libfuzzer-14-dev), ASan+UBSan,
  # in its own directory so it never mixes with the g++ builds.
  override BUILD := build-fuzz
  override CXX := clang++
  # Line tables only (-gline-tables-only, GCC's -g1 below): what a sanitizer's stack trace
  # prints (function, file:line), a quarter less compile time than full -g.
  OPT    := -O1 -gline-tables-only -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
            -fno-sanitize-recover=undefined
  SANLD  := -fsanitize=address,undefined
else ifeq ($(SAN),1)
  # A sanitizer build always lives in its own directory, even with BUILD=... given.
  override BUILD := $(BUILD)-san
  # GCC 12 reports false "maybe-uninitialized" inside <regex>/<functional> under ASan at -O1.
  OPT    := -O1 -g1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
            -Wno-maybe-uninitialized
  SANLD  := -fsanitize=address,undefined
else
  OPT    := -O2 $(DEBUG_INFO) -D_FORTIFY_SOURCE=2
  SANLD  :=
endif
CXXFLAGS ?=
CXXFLAGS += -std=c++17 $(WARN) $(HARDEN) $(OPT) -fPIC -MMD -MP
CPPFLAGS += -I. $(PKG_CFLAGS) -DGPUTOPO_SOURCE_DIR='"$(CURDIR)"'
LDFLAGS  += -Wl,-z,relro -Wl,-z,now -Wl,--as-needed $(SANLD)
LDLIBS   += $(PKG_LIBS) -ldl -lpthread

# The Slurm release the plugin is built for: the headers at $(SLURM_INCLUDE)/slurm/
# (SLURM_INCLUDE=DIR, else `pkg-config slurm`, else /usr/include). Slurm loads a SPANK
# plugin only when its major.minor matches the plugin's: build once per release.
SLURM_INCLUDE ?= $(or $(shell pkg-config --variable=includedir slurm 2>/dev/null),/usr/include)
SLURM_VERSION_H := $(SLURM_INCLUDE)/slurm/slurm_version.h
SLURM_VERSION_NUMBER := $(shell sed -n 's/^\#define SLURM_VERSION_NUMBER *\(0x[0-9a-fA-F]*\).*/\1/p' $(SLURM_VERSION_H) 2>/dev/null)
# 22.05.8, and its major 22.05 (what packages are named and pinned after).
SLURM_RELEASE := $(if $(SLURM_VERSION_NUMBER),$(shell n=$(SLURM_VERSION_NUMBER); printf '%d.%02d.%d' $$((n >> 16)) $$(((n >> 8) & 255)) $$((n & 255))))
SLURM_MAJOR   := $(basename $(SLURM_RELEASE))
ifneq ($(SLURM_INCLUDE),/usr/include)
  CPPFLAGS += -isystem $(SLURM_INCLUDE)
endif
# The one version number (topo/core/version.hpp), for packages.
VERSION := $(shell sed -n 's/.*kVersion = "\(.*\)".*/\1/p' topo/core/version.hpp)
ifeq ($(filter clean deps,$(MAKECMDGOALS)),)
  $(info gputopo $(VERSION): building against Slurm $(or $(SLURM_RELEASE),(none: $(SLURM_VERSION_H) not found)))
endif

# Slurm's plugin directory, for make install.
SLURM_PLUGIN_DIR ?= $(shell pkg-config --variable=libdir slurm 2>/dev/null | sed 's|$$|/slurm|' | grep . || \
                      (test -d /usr/lib/x86_64-linux-gnu/slurm-wlm && echo /usr/lib/x86_64-linux-gnu/slurm-wlm) || \
                      echo $(PREFIX)/lib/slurm)

# The real topology readers (hwloc, libxml2): their own archive, so that a binary links either
# them (the CLI, the tests, the readers' module) or readers/proxy.cpp (the plugin, the launcher),
# which defines the same functions, and never both (no link-order choice between two definitions).
READER_SRC      := $(addprefix topo/sources/,hwloc_convert.cpp hwloc_links.cpp hwloc_source.cpp \
                     hwloc_xml_version.cpp nccl_xml_source.cpp topology_loader.cpp xml_document.cpp)
TOPO_SRC        := $(filter-out $(READER_SRC),$(wildcard topo/*.cpp topo/*/*.cpp))
STEP_SRC        := $(wildcard step/*.cpp)
CLI_SRC         := $(wildcard cli/*.cpp)
SPANK_CORE_SRC  := $(wildcard spank/*.cpp)
SPANK_GLUE_SRC  := $(wildcard spank/glue/*.cpp)
LAUNCH_MAIN_SRC := $(wildcard launcher/main.cpp)
LAUNCH_CORE_SRC := $(filter-out launcher/main.cpp,$(wildcard launcher/*.cpp launcher/*/*.cpp run/*.cpp))
obj = $(patsubst %.cpp,$(BUILD)/obj/%.o,$(1))

# readers/module.cpp -> gputopo-readers.so: the readers that need hwloc/libxml2/ICU; the plugin
# and the launcher link readers/proxy.cpp instead, which dlopen's the module when first needed
# (readers/readers.hpp). READERS_DIR: where install puts it (the proxy's last fallback).
READERS_MOD   := readers/module.cpp
READERS_PROXY := $(call obj,readers/proxy.cpp)
READERS_DIR   ?= $(PREFIX)/lib/gputopo
UNIT_SRC        := $(wildcard tests/unit/*.cpp)
FAKE_NVML_SRC   := $(wildcard tests/fakes/nvml/*.cpp)
FAKE_HWLOC_SRC  := $(wildcard tests/fakes/hwloc/*.cpp)
BENCH_SRC       := $(wildcard bench/*.cpp)
FUZZ_SRC        := $(wildcard fuzz/fuzz_*.cpp)


LIB       := $(BUILD)/libgputopo.a
READERS_LIB := $(BUILD)/libgputopo-readers.a
# The readers and the library need each other (source_merge calls discover_this_machine).
WITH_READERS = -Wl,--start-group $(READERS_LIB) $(LIB) -Wl,--end-group
no_readers = $(filter-out $(READERS_LIB) $(LIB),$(1))
SPANK_LIB := $(BUILD)/libgputopo-spank.a
STEP_LIB  := $(BUILD)/libgputopo-step.a
LAUNCH_LIB:= $(BUILD)/libgputopo-launch.a
CLI       := $(BUILD)/gputopo
PLUGIN    := $(BUILD)/gputopo.so
LAUNCHER  := $(BUILD)/gputopo-launch
UNIT      := $(BUILD)/unit-tests
FAKE_NVML := $(BUILD)/fake-nvml/libnvidia-ml.so.1
FAKE_HWLOC_PLUGIN := $(BUILD)/fake-hwloc/hwloc_opencl.so
BENCHES   := $(patsubst bench/%.cpp,$(BUILD)/bench/%,$(BENCH_SRC))
FUZZERS   := $(patsubst fuzz/%.cpp,$(BUILD)/fuzz/%,$(FUZZ_SRC))

TARGETS := $(LIB) $(if $(CLI_SRC),$(CLI)) $(if $(SPANK_GLUE_SRC),$(PLUGIN)) \
           $(if $(LAUNCH_MAIN_SRC),$(LAUNCHER)) $(if $(FAKE_NVML_SRC),$(FAKE_NVML))
READERS   := $(BUILD)/gputopo-readers.so
TARGETS += $(READERS)
# What a task really has, read from inside it (cluster tests): devices it can open, CPUs, memory policy.
TASK_VIEW := $(BUILD)/task-view
TARGETS += $(TASK_VIEW)

.PHONY: all check check-unit check-cluster demo bench bench-deps install uninstall deb rpm deps test-deps cluster-deps clean unit-tests golden fuzz fuzz-targets fuzz-run
all: $(TARGETS)

$(BUILD)/obj/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

# The archives, each from its folder's objects.
$(LIB): $(call obj,$(TOPO_SRC))
$(READERS_LIB): $(call obj,$(READER_SRC))
$(STEP_LIB): $(call obj,$(STEP_SRC))
$(SPANK_LIB): $(call obj,$(SPANK_CORE_SRC))
$(LAUNCH_LIB): $(call obj,$(LAUNCH_CORE_SRC))
$(LIB) $(READERS_LIB) $(STEP_LIB) $(LAUNCH_LIB) $(SPANK_LIB):
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(CLI): $(call obj,$(CLI_SRC)) $(LAUNCH_LIB) $(SPANK_LIB) $(STEP_LIB) $(READERS_LIB) $(LIB)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $(call no_readers,$^) $(WITH_READERS) $(LDLIBS)

# The plugin exports only plugin_*, slurm_spank_* and spank_options. It carries its own C++
# runtime (static libstdc++ and libgcc, hidden by the export map): srun, sbatch, salloc and every
# slurmstepd load it, and loading libstdc++.so and libgcc_s.so with it took most of the ~1.2 ms
# a dlopen of the plugin cost. Only plain data crosses to the readers' module (readers/readers.hpp).
# Sanitizer builds keep the shared runtime their runtime needs.
ifeq ($(SANLD),)
  PLUGIN_RUNTIME := -static-libstdc++ -static-libgcc
endif
# The plugin and the launcher link the readers' proxy and libgputopo.a, never libgputopo-readers.a:
# the readers (and hwloc, libxml2, ICU) stay out of them: tests/cluster/t_plugin_install.sh checks ldd.
$(PLUGIN): $(call obj,$(SPANK_GLUE_SRC)) $(READERS_PROXY) $(SPANK_LIB) $(STEP_LIB) $(LIB) spank/exports.map
	$(CXX) $(CXXFLAGS) $(LDFLAGS) $(PLUGIN_RUNTIME) -shared -Wl,--version-script=spank/exports.map \
	    -o $@ $(call obj,$(SPANK_GLUE_SRC)) $(READERS_PROXY) $(SPANK_LIB) $(STEP_LIB) $(LIB) -ldl -lpthread

$(LAUNCHER): $(call obj,$(LAUNCH_MAIN_SRC)) $(READERS_PROXY) $(LAUNCH_LIB) $(SPANK_LIB) $(STEP_LIB) $(LIB)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^ -ldl -lpthread

$(READERS): $(call obj,$(READERS_MOD)) $(READERS_LIB) $(LIB) readers/module.map
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -shared -Wl,--version-script=readers/module.map \
	    -o $@ $(call obj,$(READERS_MOD)) $(WITH_READERS) $(LDLIBS)

# The proxy's compiled-in READERS_DIR: rebuilt when it changes (make deb/rpm use PREFIX=/usr).
$(BUILD)/readers-dir.stamp: FORCE
	@mkdir -p $(dir $@); echo '$(READERS_DIR)' | cmp -s - $@ || echo '$(READERS_DIR)' > $@
$(READERS_PROXY): $(BUILD)/readers-dir.stamp
$(READERS_PROXY): CPPFLAGS += -DGPUTOPO_READERS_DIR='"$(READERS_DIR)"'
# Slurm's per-task GPU rule depends on the release (step/device_scope.hpp).
$(call obj,step/device_scope.cpp): CPPFLAGS += $(if $(SLURM_VERSION_NUMBER),-DGPUTOPO_SLURM_VERSION_NUMBER=$(SLURM_VERSION_NUMBER)UL)
# ... and so does its default task order (step/slurm_rank_order.hpp).
$(call obj,step/slurm_rank_order.cpp): CPPFLAGS += $(if $(SLURM_VERSION_NUMBER),-DGPUTOPO_SLURM_VERSION_NUMBER=$(SLURM_VERSION_NUMBER)UL)
# and so does the advice for ranks that share GPUs under per-task device cgroups (step/sharing_advice.hpp).
$(call obj,step/sharing_advice.cpp): CPPFLAGS += $(if $(SLURM_VERSION_NUMBER),-DGPUTOPO_SLURM_VERSION_NUMBER=$(SLURM_VERSION_NUMBER)UL)
.PHONY: FORCE

$(FAKE_NVML): $(call obj,$(FAKE_NVML_SRC)) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $^ $(LDLIBS)

$(TASK_VIEW): $(BUILD)/obj/tests/cluster/task_view.o
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^

$(UNIT): $(call obj,$(UNIT_SRC)) $(LAUNCH_LIB) $(SPANK_LIB) $(STEP_LIB) $(READERS_LIB) $(LIB)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $(call no_readers,$^) $(WITH_READERS) $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LAUNCH_LIB) $(SPANK_LIB) $(STEP_LIB) $(READERS_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $(call no_readers,$^) $(WITH_READERS) $(LDLIBS)

# A fake hwloc plugin (tests/fakes/hwloc/): hwloc_opencl.so, linked only against libhwloc.
$(FAKE_HWLOC_PLUGIN): $(call obj,$(FAKE_HWLOC_SRC))
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -shared -o $@ $^ -lhwloc

unit-tests: $(UNIT) $(if $(FAKE_NVML_SRC),$(FAKE_NVML)) $(if $(FAKE_HWLOC_SRC),$(FAKE_HWLOC_PLUGIN))

# libFuzzer targets, one per fuzz/fuzz_*.cpp: `make fuzz` builds them in
# build-fuzz/fuzz/; `make fuzz-run [FUZZ_SECONDS=25]` runs each on its seed
# corpus fuzz/corpus/<target>/ (fuzz/run.sh).
fuzz:
	@$(MAKE) --no-print-directory deps DEPS="clang libfuzzer-14-dev"
	$(MAKE) FUZZ=1 fuzz-targets

fuzz-targets: $(FUZZERS)
.PRECIOUS: $(BUILD)/obj/fuzz/%.o

$(BUILD)/fuzz/%: $(BUILD)/obj/fuzz/%.o $(LAUNCH_LIB) $(SPANK_LIB) $(STEP_LIB) $(READERS_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -fsanitize=fuzzer -o $@ $(call no_readers,$^) $(WITH_READERS) $(LDLIBS)

FUZZ_SECONDS ?= 25
fuzz-run: fuzz
	bash fuzz/run.sh $(FUZZ_SECONDS)

# The Debian packages, installed when missing (as root):
#   make deps       what `make` needs: the compiler, hwloc, libxml2 and the Slurm headers
#   make test-deps  what the tests need besides: a Slurm cluster (slurmctld, slurmd, munge),
#                   Catch2, valgrind, Graphviz, librsvg, man-db, PyTorch (about 235 packages)
# make check installs both; make demo the build's and the cluster's.
BUILD_DEPS   := g++ make pkg-config libhwloc-dev libxml2-dev libslurm-dev
CLUSTER_DEPS := slurmctld slurmd slurm-client munge python3 procps iproute2 hwloc
TEST_DEPS    := catch2 $(CLUSTER_DEPS) valgrind graphviz librsvg2-bin man-db python3-torch python3-yaml
DEPS         := $(BUILD_DEPS)
apt_install = missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	    echo "gputopo: installing$$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
# test-deps and cluster-deps come after deps: one apt-get at a time, also under make -j.
deps:
	@$(call apt_install,$(DEPS))
test-deps: deps
	@$(call apt_install,$(TEST_DEPS))
cluster-deps: deps
	@$(call apt_install,$(CLUSTER_DEPS))

check: test-deps
	$(MAKE) all unit-tests
	bash tests/run_tests.sh --build $(BUILD)

# The unit tests include end-to-end runs of the CLI (GPUTOPO_CLI, tests/run_tests.sh).
unit-tests: $(if $(CLI_SRC),$(CLI)) $(LAUNCHER) $(READERS)

check-unit: unit-tests
	bash tests/run_tests.sh --build $(BUILD) --unit-only

# Rewrite the checked-in expected plans (tests/fixtures/expected/) after an
# intended planner change; review the diff and commit it.
golden: unit-tests
	GPUTOPO_UPDATE_GOLDEN=1 $(UNIT) "[golden]"

check-cluster: all
	bash tests/run_tests.sh --build $(BUILD) --cluster-only

demo: cluster-deps
	$(MAKE) all
	bash tests/cluster/demo.sh $(BUILD)

# bench_island_sim hands the sweep's rows over 1.2x to a MIP solver (the slice relaxation, a
# tighter bound): Debian's coinor-cbc, installed when missing.
bench-deps:
	@dpkg -s coinor-cbc >/dev/null 2>&1 || { echo "gputopo: installing coinor-cbc"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq && apt-get install -y -qq --no-install-recommends coinor-cbc >/dev/null; }

bench: bench-deps all $(BENCHES)
	@for b in $(BENCHES); do echo "== $$b"; $$b || exit 1; done
	@for s in $(wildcard bench/*.sh); do echo "== $$s"; bash $$s $(BUILD) || exit 1; done

# The man pages name the paths of a PREFIX=/usr/local install on Debian; installed, they
# name this install's (PREFIX, Slurm's plugin directory), so a package under /usr says /usr.
roff_path = $(subst -,\\-,$(1))
MAN_PATHS = -e 's|/usr/local/|$(call roff_path,$(PREFIX))/|g' \
            -e 's|/usr/lib/x86_64\\-linux\\-gnu/slurm\\-wlm/gputopo.so|$(call roff_path,$(SLURM_PLUGIN_DIR))/gputopo.so|g'

# Where install puts the plugstack.conf.d snippet (packages: /usr/share/gputopo/plugstack.conf,
# enabled by the admin with one symlink). An existing, different file is kept and the new one
# goes beside it as .dist.
PLUGSTACK_CONF ?= /etc/slurm/plugstack.conf.d/gputopo.conf
# Everything install puts under $(DESTDIR), relative to it (uninstall removes these).
INSTALLED = $(PREFIX)/bin/gputopo $(PREFIX)/bin/gputopo-launch $(READERS_DIR)/gputopo-readers.so \
            $(SLURM_PLUGIN_DIR)/gputopo.so $(PREFIX)/libexec/gputopo-healthcheck.sh \
            $(PREFIX)/share/gputopo/python/gputopo_run.py \
            $(foreach m,$(wildcard man/*.[158]),$(PREFIX)/share/man/man$(subst .,,$(suffix $(m)))/$(notdir $(m))) \
            $(foreach d,$(wildcard docs/*.md),$(PREFIX)/share/doc/gputopo/$(notdir $(d))) \
            $(foreach d,$(wildcard docs/img/*),$(PREFIX)/share/doc/gputopo/img/$(notdir $(d)))

install: all
	install -D -m 0755 $(CLI) $(DESTDIR)$(PREFIX)/bin/gputopo
	install -D -m 0755 $(LAUNCHER) $(DESTDIR)$(PREFIX)/bin/gputopo-launch
	install -D -m 0644 $(READERS) $(DESTDIR)$(READERS_DIR)/gputopo-readers.so
	install -D -m 0644 $(PLUGIN) $(DESTDIR)$(SLURM_PLUGIN_DIR)/gputopo.so
	for m in $(wildcard man/*.[158]); do \
	    install -d $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}; \
	    sed $(MAN_PATHS) $$m > $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}/$${m#man/}; \
	    chmod 0644 $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}/$${m#man/}; done
	install -d $(DESTDIR)$(PREFIX)/share/doc/gputopo/img
	for d in $(wildcard docs/*.md); do install -m 0644 $$d $(DESTDIR)$(PREFIX)/share/doc/gputopo/; done
	for d in $(wildcard docs/img/*); do install -m 0644 $$d $(DESTDIR)$(PREFIX)/share/doc/gputopo/img/; done
	install -D -m 0755 etc/gputopo-healthcheck.sh $(DESTDIR)$(PREFIX)/libexec/gputopo-healthcheck.sh
	install -D -m 0644 python/gputopo_run.py $(DESTDIR)$(PREFIX)/share/gputopo/python/gputopo_run.py
	@mkdir -p $(BUILD)
	sed 's|@PLUGIN@|$(SLURM_PLUGIN_DIR)/gputopo.so|' etc/plugstack.conf.d/gputopo.conf > $(BUILD)/plugstack-gputopo.conf
	@conf=$(DESTDIR)$(PLUGSTACK_CONF); \
	if [ -e $$conf ] && ! cmp -s $(BUILD)/plugstack-gputopo.conf $$conf; then \
	    install -m 0644 $(BUILD)/plugstack-gputopo.conf $$conf.dist; \
	    echo "gputopo: kept $$conf (yours); the new one is $$conf.dist"; \
	else install -D -m 0644 $(BUILD)/plugstack-gputopo.conf $$conf; fi

# Removes what install put there; the plugstack snippet only when it is still the one
# install wrote (else it is the admin's: kept, with a message).
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED)) $(DESTDIR)$(PLUGSTACK_CONF).dist
	rm -rf $(DESTDIR)$(PREFIX)/share/gputopo/python/__pycache__
	-rmdir $(DESTDIR)$(READERS_DIR) $(DESTDIR)$(PREFIX)/share/doc/gputopo/img $(DESTDIR)$(PREFIX)/share/doc/gputopo \
	    $(DESTDIR)$(PREFIX)/share/gputopo/python 2>/dev/null
	@conf=$(DESTDIR)$(PLUGSTACK_CONF); [ -e $$conf ] || exit 0; \
	sed 's|@PLUGIN@|$(SLURM_PLUGIN_DIR)/gputopo.so|' etc/plugstack.conf.d/gputopo.conf | cmp -s - $$conf && rm -f $$conf || \
	    echo "gputopo: kept $$conf (changed by you)"

# Packages for the Slurm release the plugin is built against (packaging/), installed in /usr.
deb rpm: PREFIX = /usr
deb: all
	bash packaging/deb.sh $(BUILD) $(VERSION) $(SLURM_MAJOR)
rpm: all
	bash packaging/rpm.sh $(BUILD) $(VERSION) $(SLURM_MAJOR)

clean:
	rm -rf build build-san build-fuzz

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
