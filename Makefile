# The commands the README and CONTRIBUTING name.
.PHONY: test check demo

# Set up from nothing (.venv and the TensorFlow environments) and run every test.
test:
	bash scripts/test.sh

# The inner loop: lint, types, and the suite without the slow and TensorFlow tests (meant to
# stay under a minute on 2 cores).
check:
	EST2TPU_LINT=1 bash scripts/test.sh -q -m "not slow and not tf" -n 2 --dist loadgroup

# Migrate the bundled example, keep the result in build/demo, and compare it with the original
# (`est2tpu verify`); without Python 3.11 it shows the migration only.
demo:
	bash scripts/demo.sh
