# The two commands the README opens with.
.PHONY: test demo

# Set up from nothing and run all tests.
test:
	bash scripts/test.sh

# Set up, migrate the bundled example, show the diff, train the result on CPU.
demo:
	bash scripts/demo.sh
