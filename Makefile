# gputopo — topology-aware GPU job launch for Slurm.
#
#   make            build the library, the CLI, the SPANK plugin and the launcher
#   make check      install missing build/test packages, build, run every test
#   make demo       install what is missing, start a local Slurm cluster, run an
#                   `srun --gpu-topo=island,verbose` job on shipped topologies
#   make check-unit unit tests only;  make SAN=1 check-unit  under ASan+UBSan
#   make bench      run the benchmarks under bench/
#   make install [PREFIX=/usr/local] [DESTDIR=]
#
# Sources are found by directory:
#   topo/*/*.cpp      -> libgputopo.a (core model, sources, planner, fabric, output; no Slurm)
#   step/*.cpp        -> libgputopo-step.a: the step binding shared by the plugin and the launcher
#   cli/*.cpp         -> gputopo (CLI)
#   spank/*.cpp       -> Slurm-free plugin logic (linked into tests too)
#   spank/glue/*.cpp  -> the SPANK entry points (include <slurm/spank.h>)
#   launcher/*.cpp    -> gputopo-launch (launcher/main.cpp holds main())
#   tests/unit/*.cpp  -> unit-tests (Catch2)
#   tests/fakes/nvml/*.cpp -> a fake libnvidia-ml.so.1 for tests
#   bench/*.cpp       -> one benchmark binary each

CXX      ?= g++
BUILD    ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
SAN      ?=

PKGS     := hwloc libxml-2.0
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN     := -Wall -Wextra -Werror -Wformat=2 -Wformat-security
HARDEN   := -fstack-protector-strong -fstack-clash-protection -fcf-protection -D_GLIBCXX_ASSERTIONS
ifeq ($(SAN),1)
  # A sanitizer build always lives in its own directory, even with BUILD=... given.
  override BUILD := $(BUILD)-san
  # GCC 12 reports false "maybe-uninitialized" inside <regex>/<functional> under ASan at -O1.
  OPT    := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
            -Wno-maybe-uninitialized
  SANLD  := -fsanitize=address,undefined
else
  OPT    := -O2 -g -D_FORTIFY_SOURCE=2
  SANLD  :=
endif
CXXFLAGS ?=
CXXFLAGS += -std=c++17 $(WARN) $(HARDEN) $(OPT) -fPIC -MMD -MP
CPPFLAGS += -I. $(PKG_CFLAGS) -DGPUTOPO_SOURCE_DIR='"$(CURDIR)"'
LDFLAGS  += -Wl,-z,relro -Wl,-z,now -Wl,--as-needed $(SANLD)
LDLIBS   += $(PKG_LIBS) -ldl -lpthread

# Slurm's plugin directory, for make install.
SLURM_PLUGIN_DIR ?= $(shell pkg-config --variable=libdir slurm 2>/dev/null | sed 's|$$|/slurm|' | grep . || \
                      (test -d /usr/lib/x86_64-linux-gnu/slurm-wlm && echo /usr/lib/x86_64-linux-gnu/slurm-wlm) || \
                      echo $(PREFIX)/lib/slurm)

TOPO_SRC        := $(wildcard topo/*.cpp topo/*/*.cpp)
STEP_SRC        := $(wildcard step/*.cpp)
CLI_SRC         := $(wildcard cli/*.cpp)
SPANK_CORE_SRC  := $(wildcard spank/*.cpp)
SPANK_GLUE_SRC  := $(wildcard spank/glue/*.cpp)
LAUNCH_MAIN_SRC := $(wildcard launcher/main.cpp)
LAUNCH_CORE_SRC := $(filter-out launcher/main.cpp,$(wildcard launcher/*.cpp))
# launcher/topology/*.cpp -> gputopo-launch-topology.so (the topology readers, dlopen'ed by the
# launcher only when it binds a task itself, so gputopo-launch does not load hwloc/libxml2/ICU)
LAUNCH_TOPO_SRC := $(wildcard launcher/topology/*.cpp)
UNIT_SRC        := $(wildcard tests/unit/*.cpp)
FAKE_NVML_SRC   := $(wildcard tests/fakes/nvml/*.cpp)
BENCH_SRC       := $(wildcard bench/*.cpp)

obj = $(patsubst %.cpp,$(BUILD)/obj/%.o,$(1))

LIB       := $(BUILD)/libgputopo.a
SPANK_LIB := $(BUILD)/libgputopo-spank.a
STEP_LIB  := $(BUILD)/libgputopo-step.a
LAUNCH_LIB:= $(BUILD)/libgputopo-launch.a
CLI       := $(BUILD)/gputopo
PLUGIN    := $(BUILD)/gputopo.so
LAUNCHER  := $(BUILD)/gputopo-launch
UNIT      := $(BUILD)/unit-tests
FAKE_NVML := $(BUILD)/fake-nvml/libnvidia-ml.so.1
BENCHES   := $(patsubst bench/%.cpp,$(BUILD)/bench/%,$(BENCH_SRC))

TARGETS := $(LIB) $(if $(CLI_SRC),$(CLI)) $(if $(SPANK_GLUE_SRC),$(PLUGIN)) \
           $(if $(LAUNCH_MAIN_SRC),$(LAUNCHER)) $(if $(FAKE_NVML_SRC),$(FAKE_NVML))
LAUNCH_TOPO := $(BUILD)/gputopo-launch-topology.so
TARGETS += $(if $(LAUNCH_TOPO_SRC),$(LAUNCH_TOPO))

.PHONY: all check check-unit check-cluster demo bench install deps clean unit-tests
all: $(TARGETS)

$(BUILD)/obj/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

$(LIB): $(call obj,$(TOPO_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(STEP_LIB): $(call obj,$(STEP_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(SPANK_LIB): $(call obj,$(SPANK_CORE_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LAUNCH_LIB): $(call obj,$(LAUNCH_CORE_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(CLI): $(call obj,$(CLI_SRC)) $(LAUNCH_LIB) $(STEP_LIB) $(LIB)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The plugin exports only plugin_*, slurm_spank_* and spank_options.
$(PLUGIN): $(call obj,$(SPANK_GLUE_SRC)) $(SPANK_LIB) $(STEP_LIB) $(LIB) spank/exports.map
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -shared -Wl,--version-script=spank/exports.map \
	    -o $@ $(call obj,$(SPANK_GLUE_SRC)) $(SPANK_LIB) $(STEP_LIB) $(LIB) $(LDLIBS)

$(LAUNCHER): $(call obj,$(LAUNCH_MAIN_SRC)) $(LAUNCH_LIB) $(STEP_LIB) $(LIB)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(LAUNCH_TOPO): $(call obj,$(LAUNCH_TOPO_SRC)) $(LIB)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -shared -o $@ $^ $(LDLIBS)

$(FAKE_NVML): $(call obj,$(FAKE_NVML_SRC)) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $^ $(LDLIBS)

$(UNIT): $(call obj,$(UNIT_SRC)) $(call obj,$(LAUNCH_TOPO_SRC)) $(SPANK_LIB) $(LAUNCH_LIB) $(STEP_LIB) $(LIB)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(SPANK_LIB) $(LAUNCH_LIB) $(STEP_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

unit-tests: $(UNIT) $(if $(FAKE_NVML_SRC),$(FAKE_NVML))

# Install the Debian packages the build and the tests need, when missing.
DEPS := g++ make pkg-config libhwloc-dev hwloc libxml2-dev catch2 libibverbs-dev \
        slurmctld slurmd slurm-client libslurm-dev munge python3 procps iproute2 \
        graphviz man-db
deps:
	@missing=""; for p in $(DEPS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	    echo "gputopo: installing$$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

check: deps
	$(MAKE) all unit-tests
	bash tests/run_tests.sh --build $(BUILD)

# The unit tests include end-to-end runs of the CLI (GPUTOPO_CLI, tests/run_tests.sh).
unit-tests: $(if $(CLI_SRC),$(CLI))

check-unit: unit-tests
	bash tests/run_tests.sh --build $(BUILD) --unit-only

check-cluster: all
	bash tests/run_tests.sh --build $(BUILD) --cluster-only

demo: deps
	$(MAKE) all
	bash tests/cluster/demo.sh $(BUILD)

bench: all $(BENCHES)
	@for b in $(BENCHES); do echo "== $$b"; $$b || exit 1; done
	@for s in $(wildcard bench/*.sh); do echo "== $$s"; bash $$s $(BUILD) || exit 1; done

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(SLURM_PLUGIN_DIR) \
	    $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man8 \
	    $(DESTDIR)/etc/slurm/plugstack.conf.d
	install -m 0755 $(CLI) $(DESTDIR)$(PREFIX)/bin/gputopo
	$(if $(wildcard $(LAUNCHER)),install -m 0755 $(LAUNCHER) $(DESTDIR)$(PREFIX)/bin/gputopo-launch)
	$(if $(wildcard $(LAUNCH_TOPO)),install -D -m 0755 $(LAUNCH_TOPO) $(DESTDIR)$(PREFIX)/lib/gputopo/gputopo-launch-topology.so)
	$(if $(wildcard $(PLUGIN)),install -m 0755 $(PLUGIN) $(DESTDIR)$(SLURM_PLUGIN_DIR)/gputopo.so)
	for m in $(wildcard man/*.1); do install -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man1/; done
	for m in $(wildcard man/*.5); do install -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man5/; done
	for m in $(wildcard man/*.8); do install -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man8/; done
	install -d $(DESTDIR)$(PREFIX)/share/doc/gputopo/img
	for d in $(wildcard docs/*.md); do install -m 0644 $$d $(DESTDIR)$(PREFIX)/share/doc/gputopo/; done
	for d in $(wildcard docs/img/*); do install -m 0644 $$d $(DESTDIR)$(PREFIX)/share/doc/gputopo/img/; done
	install -D -m 0755 etc/gputopo-healthcheck.sh $(DESTDIR)$(PREFIX)/libexec/gputopo-healthcheck.sh
	$(if $(wildcard etc/plugstack.conf.d/gputopo.conf),sed 's|@PLUGIN@|$(SLURM_PLUGIN_DIR)/gputopo.so|' etc/plugstack.conf.d/gputopo.conf > $(DESTDIR)/etc/slurm/plugstack.conf.d/gputopo.conf)

clean:
	rm -rf build build-san

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
