# Two commands set everything up on a fresh Debian machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

# Debian libraries that PySide6's wheels load even with QT_QPA_PLATFORM=offscreen
# (EGL/GL, xkbcommon, fontconfig, dbus) plus the xcb bits a real window needs, and a font.
DEB_LIBS := libegl1 libgl1 libopengl0 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 \
            libfreetype6 libdbus-1-3 libglib2.0-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 \
            libxcb-shape0 libxcb-xinerama0 libxcb-randr0 libxcb-render-util0 libxcb-image0 \
            libxcb-xkb1 libx11-xcb1 fonts-dejavu-core
# A virtual X server for the tests that drive the app in a real window, and librsvg to render an
# exported SVG independently of Qt (those tests skip without them).
TEST_DEB_LIBS := xvfb librsvg2-bin

.PHONY: run test typecheck setup native system-libs test-libs bench screenshots clean operating-point docs

setup: $(STAMP)

# every compiled module's sources (AttentionStore's engine, the serving core's block cache, the Mooncake
# scanner): an edit rebuilds them (a stale build is never run: their native/__init__.py)
NATIVE_SRC := $(wildcard kvviz/mechanisms/attention_store/native/*.pyx kvviz/mechanisms/attention_store/native/*.pxi kvviz/mechanisms/attention_store/native/*.pxd \
                          kvviz/serving/native/*.pyx kvviz/serving/native/*.pxi kvviz/serving/native/*.pxd \
                          kvviz/requests/native/*.pyx)

$(STAMP): pyproject.toml setup.py $(NATIVE_SRC)
	@$(MAKE) --no-print-directory system-libs
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# Installs whichever of the packages in $(1) are absent (as root, with apt-get); else names them.
define install_debs
	@missing=""; if command -v dpkg-query >/dev/null 2>&1; then \
	  for p in $(1); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	  done; fi; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian packages:$$missing"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; } \
	      || echo "warning: could not install:$$missing"; \
	  else echo "warning: missing Debian packages:$$missing (install them as root)"; fi; \
	fi
endef

# Rebuild the compiled engine in place after editing its .pyx/.pxi files.
native: setup
	$(PY) setup.py --quiet build_ext --inplace

system-libs:
	$(call install_debs,$(DEB_LIBS))

test-libs:
	$(call install_debs,$(TEST_DEB_LIBS))

run: setup
	$(PY) -m app.main

# The boundaries first (lint, import contracts in pyproject.toml, types), then every test.
test: setup test-libs
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m mypy
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q

# mypy, strict on kvviz/, with the settings (and the modules not yet typed) in pyproject.toml [tool.mypy]
typecheck: setup
	$(PY) -m mypy

# Every benchmark, each output kept in benchmarks/results/NAME.txt with its machine, load, commit and
# date (benchmarks/record.py): the documentation's Performance page is generated from those records.
bench: setup
	QT_QPA_PLATFORM=offscreen $(PY) benchmarks/run_all.py --record

# The operating-point section of docs/mechanisms/attention-store.md and its per-model figures (36 runs, under a minute).
operating-point: setup
	$(PY) -m kvviz operating-point attention_store_sharegpt --svg-dir resources/operating_point --readme docs/mechanisms/attention-store.md

clean:
	rm -rf $(VENV) out build *.egg-info

# The README's and documentation's figures, rendered offscreen by the app itself (kvviz-gui --screenshot).
SHOT := QT_QPA_PLATFORM=offscreen $(PY) -m app.main
screenshots: setup
	$(SHOT) rope_prefetch_16 --screenshot resources/screenshots/rope_prefetch_16.png --size 1280x800
	$(SHOT) engram_qwen3_32b_rdma --view timeline --screenshot resources/screenshots/engram_rdma_timeline.png --size 1280x800
	$(SHOT) engram_qwen3_32b_cxl --select 'L2 rows@57us' --measure 58us,112.5us --screenshot resources/screenshots/engram_cxl_measure.png --size 1600x900
	$(SHOT) engram_qwen3_32b_rdma --view sweep --sweep engram.layer=2:12:2 --sweep pool.latency_us=0.5:6:1 --metric slack_us --screenshot resources/screenshots/engram_feasibility.png --size 1280x800
	$(SHOT) ladder_simulated --view ladder --screenshot resources/screenshots/ladder.png --size 1280x800
	$(SHOT) rope_prefetch_16 --view occupancy --screenshot resources/screenshots/occupancy.png --size 1280x800
	$(SHOT) rope_prefetch_16 --view compare --set storage.latency_us=40 --screenshot resources/screenshots/compare.png --size 1280x800
	$(SHOT) prefix_cache_mooncake --view tiers --screenshot resources/screenshots/prefix_cache_tiers.png --size 1280x800
	$(SHOT) prefix_cache_mooncake --view surface --screenshot resources/screenshots/prefix_cache_surface.png --size 1280x800
	$(SHOT) attention_store_sharegpt --view counters --whole-run --screenshot resources/screenshots/attention_store_counters.png --size 1280x800
	$(SHOT) attention_store_sharegpt --view policies --screenshot resources/screenshots/attention_store_policies.png --size 1280x800
	$(SHOT) attention_store_sharegpt --view sweep --sweep hardware.ssd_gb=2500,5000,10000,20000 --metric 'policies.*.hit_rate' --screenshot resources/screenshots/attention_store_ssd_size.png --size 1280x800
	$(SHOT) attention_store_sharegpt --view sweep --sweep workload.arrival_rate_per_s=0.5,1.0,1.5,2.0 --metric 'policies.*.hit_rate' --screenshot resources/screenshots/attention_store_rate.png --size 1280x800
	$(SHOT) rope_prefetch_16 --view replay --screenshot resources/screenshots/replay.png --size 1280x800
	$(SHOT) cluster_mooncake_routing --view routers --screenshot resources/screenshots/cluster_routers.png --size 1280x800

# The documentation site: the generated pages (every scenario field, command, flag and metric; the
# claims table; one screenshot per tab), then mkdocs in strict mode (a broken link fails) into site/.
DOCS_STAMP := $(VENV)/.docs-stamp
$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[docs]'
	@touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) docs/_gen/generate.py
	$(PY) -m mkdocs build --strict --quiet
