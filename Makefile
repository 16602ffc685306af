# The two commands the README opens with.
.PHONY: test check demo

# Set up from nothing and run all tests.
test:
	bash scripts/test.sh

# The inner loop: lint, types, and the suite without the slow and TensorFlow tests (goal: under a
# minute on 2 cores). Measured on 2 quiet cores: 48 s of wall, 89 s of CPU, 1,501 tests (seventh
# session; 64 s before its engine changes, 2 min 26 s before issue 17's work).
check:
	EST2TPU_LINT=1 bash scripts/test.sh -q -m "not slow and not tf" -n 2 --dist loadgroup

# Set up, migrate the bundled example, show the diff, train the result on CPU.
demo:
	bash scripts/demo.sh
