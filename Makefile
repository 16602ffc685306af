# The two commands the README opens with.
.PHONY: test check demo

# Set up from nothing and run all tests.
test:
	bash scripts/test.sh

# The inner loop (2.5 min on 2 cores; the goal is 1): lint, types, and the suite without the slow and
# TensorFlow tests.
check:
	EST2TPU_LINT=1 bash scripts/test.sh -q -m "not slow and not tf" -n 2 --dist loadgroup

# Set up, migrate the bundled example, show the diff, train the result on CPU.
demo:
	bash scripts/demo.sh
