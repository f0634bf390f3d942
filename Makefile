# alertsieve: `make demo` and `make test` are all a newcomer needs (both run `make setup` first).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: setup demo test lint lab kafka-up kafka-down clean distclean

setup: $(STAMP)
	@$(BIN)/alertsieve setup

$(STAMP): pyproject.toml
	@command -v java >/dev/null || { echo "Java 17+ is required (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@start=$$(date +%s); \
	  test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
	  $(BIN)/python -m pip install -q --upgrade pip; \
	  $(BIN)/python -m pip install -q -e '.[dev]'; \
	  rm -f $(VENV)/.installed-*; touch $@; \
	  echo "  Python environment: $(VENV) with alertsieve and its dependencies ($$(( $$(date +%s) - start ))s)"

demo: setup
	@$(BIN)/alertsieve demo

lint: setup
	$(BIN)/ruff check .

test: setup lint
	$(BIN)/pytest

lab: setup
	@mkdir -p notebooks
	$(BIN)/jupyter lab --ip 127.0.0.1 --no-browser notebooks/

kafka-up: setup
	@$(BIN)/alertsieve kafka start

kafka-down:
	@$(BIN)/alertsieve kafka stop

clean:
	rm -rf .pytest_cache .ruff_cache spark-warehouse metastore_db derby.log
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) *.egg-info
