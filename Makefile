# The two commands the README opens with.
.PHONY: test check demo

# Set up from nothing and run all tests.
test:
	bash scripts/test.sh

# The inner loop: lint, types, and the suite without the slow and TensorFlow tests (goal: under a
# minute on 2 cores). Measured on 2 quiet cores: 59.9 s of wall, 116 s of CPU, 1,483 tests
# (61 s for 1,281 tests a session earlier; before issue 17's work: 2 min 26 s).
check:
	EST2TPU_LINT=1 bash scripts/test.sh -q -m "not slow and not tf" -n 2 --dist loadgroup

# Set up, migrate the bundled example, show the diff, train the result on CPU.
demo:
	bash scripts/demo.sh
