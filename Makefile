# alertsieve: `make demo` and `make test` are all a newcomer needs (both run `make setup` first).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
# A TOM's own environment: the TOM Toolkit pins numpy and astropy, the job's environment does not follow.
TOM_VENV  := .venv-tom
TOM_STAMP := $(TOM_VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

# fink-science's Rubin classifiers in their own frameworks: the suite's oracle of models/cats.py and
# models/snn_sn_vs_other.py, and where models/training/*_to_onnx.py convert them. SuperNNova needs
# torch (Debian's python3-torch: PyPI's pulls GBs of CUDA wheels), CATS TensorFlow 2.15 with
# numpy < 2; neither is in the job's environment. Made for the tests only, never by `make demo`.
FINK_VENV  := .venv-fink
FINK_STAMP := $(FINK_VENV)/.installed-1
FINK_PACKAGES := tensorflow-cpu==2.15.1 tf2onnx==1.16.1 "onnx<1.17" onnxruntime "pandas<2.3" \
  "pyarrow>=15,<20" pyspark==4.2.0 line-profiler h5py matplotlib seaborn natsort colorama \
  scikit-learn tqdm pyyaml "astropy<6"

.PHONY: setup tom demo test test-fast lint lab bench bench-quick kafka-up kafka-down clean distclean

setup: $(STAMP)
	@$(BIN)/alertsieve setup

# The TOM's environment (the suite's TOM test, or a TOM user): not part of setup, nothing else needs it.
tom: $(TOM_STAMP)

# pip without its new-release notice, and without setuptools' note that comes with every editable
# install of a project whose folders install under other names (setup.py): "Editable installation.
# Please be careful with folders in your working directory with the same name as your package".
# Real warnings and errors still print.
QUIET  := PYTHONWARNINGS="ignore:Editable installation" PIP_DISABLE_PIP_VERSION_CHECK=1

# uv installs (parallel downloads: a third of pip's time here); the jars are fetched meanwhile by the
# system Python (alertsieve.spark.jars needs only the standard library and Java), and
# `alertsieve setup` then finds them cached, or fetches them itself and says why it could not.
$(STAMP): pyproject.toml setup.py
	@command -v java >/dev/null || { echo "Java 17+ is required (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@start=$$(date +%s); \
	  test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
	  PYTHONPATH=$(CURDIR) $(PYTHON) -m alertsieve.spark.jars > $(VENV)/jars.log 2>&1 & jars=$$!; \
	  $(QUIET) $(BIN)/python -m pip install -q uv; \
	  $(BIN)/uv pip install -q --python $(BIN)/python -e '.[stream,dev,notebooks,bench]' || exit 1; \
	  wait $$jars; \
	  rm -f $(VENV)/.installed-*; touch $@; \
	  echo "  Python environment: $(VENV) with alertsieve and its dependencies ($$(( $$(date +%s) - start ))s)"

# The TOM's environment from a wheel of this checkout, as a TOM installs it: the light core (no
# Spark) and the tom extra, made afresh when pyproject.toml changes. The suite installs the wheel
# of the code it tests into it (tests/wheels.py).
$(TOM_STAMP): pyproject.toml setup.py | $(STAMP)
	@set -e; start=$$(date +%s); wheels=$$(mktemp -d); \
	  $(QUIET) $(BIN)/python -m pip wheel -q --no-deps --no-build-isolation -w $$wheels .; \
	  rm -rf build $(TOM_VENV); \
	  $(PYTHON) -m venv $(TOM_VENV); \
	  $(BIN)/uv pip install -q --python $(TOM_VENV)/bin/python "alertsieve[tom] @ file://$$(ls $$wheels/alertsieve-*.whl)"; \
	  rm -rf $$wheels; touch $@; \
	  echo "  TOM environment: $(TOM_VENV) with alertsieve[tom] from a wheel, no Spark ($$(( $$(date +%s) - start ))s)"

$(FINK_STAMP):
	@/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "The tests' fink-science environment needs Debian's torch: apt-get install python3-torch python3-venv"; exit 1; }
	@set -e; start=$$(date +%s); rm -rf $(FINK_VENV); \
	  /usr/bin/python3 -m venv --system-site-packages $(FINK_VENV); \
	  $(QUIET) $(FINK_VENV)/bin/python -m pip install -q $(FINK_PACKAGES); \
	  $(QUIET) $(FINK_VENV)/bin/python -m pip install -q --no-deps fink-science==7.4.0 supernnova==3.0.51 fink-utils==0.79.0; \
	  touch $@; \
	  echo "  fink-science environment: $(FINK_VENV) with SuperNNova (Debian's torch) and CATS (TensorFlow 2.15) ($$(( $$(date +%s) - start ))s)"

demo: setup
	@$(BIN)/alertsieve demo

# Style, formatting, and the layers of pyproject.toml's import contract (an upward import fails, naming both modules).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# `make test WORKERS=2`: two pytest workers, a core each (tests/README.md): a module, or a group of
# modules sharing a costly fixture, runs whole in one worker, the longest first; both use the one
# broker. One process by default until the counts-topic race two workers exposed is fixed (tests/README.md).
WORKERS ?= 1
XDIST := $(if $(filter-out 1,$(WORKERS)),-n $(WORKERS) --no-loadscope-reorder)

test: setup lint $(TOM_STAMP) $(FINK_STAMP)
	$(BIN)/pytest $(XDIST)

# Pure logic and Spark on static DataFrames, no broker, cluster or whole job, and nothing `make setup`
# does not install (the tests marked tools need .venv-fink or promtool: `make test` runs them). One
# process: two workers would only share the cores its Spark already fills (2.6 min against 2.9).
test-fast: setup lint
	$(BIN)/pytest -m "not integration and not slow and not tools"

lab: setup
	@mkdir -p notebooks
	$(BIN)/jupyter lab --ip 127.0.0.1 --no-browser notebooks/

# The scaling experiments of conf/experiments/ (about 40 minutes; resumable), two soaks of a million
# alerts (about 75 minutes each: some three hours in all), then notebook 04
# renders them in place and saves its figures to docs/figures/.
bench: setup
	$(BIN)/alertsieve bench run conf/experiments/*.yaml
	$(BIN)/alertsieve bench soak --alerts 1000000 --out results/soak
	$(BIN)/alertsieve bench soak --alerts 1000000 --kill-after 1800 --out results/soak-kill
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace notebooks/04_scaling_analysis.ipynb

# The same at each file's small 'quick' scale (a few minutes), into results/quick/.
bench-quick: setup
	$(BIN)/alertsieve bench run --quick conf/experiments/*.yaml
	ALERTSIEVE_RESULTS=../results/quick ALERTSIEVE_FIGURES=../results/quick/figures \
	  $(BIN)/jupyter nbconvert --to notebook --execute --output-dir results/quick notebooks/04_scaling_analysis.ipynb

kafka-up: setup
	@$(BIN)/alertsieve kafka start

kafka-down:
	@$(BIN)/alertsieve kafka stop

clean:
	rm -rf .pytest_cache .ruff_cache spark-warehouse metastore_db derby.log
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) $(TOM_VENV) $(FINK_VENV) *.egg-info
