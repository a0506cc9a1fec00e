// samples/cxx_threads.cc: allocation in one thread, free in another, the
// pattern that loses events when a recorder falls behind. TASKS tasks run
// through std::async, each on a thread of its own; each news BLOCKS blocks
// and hands them back through its future, and the main thread deletes
// every one. Nothing leaks.
//
// usage: cxx_threads [TASKS [BLOCKS [PARALLEL]]]   (default 400 1000 4)
//
// Prints its ground truth: the blocks newed and deleted, their bytes, and
// that nothing is left.
#include <cstdio>
#include <cstdlib>
#include <future>
#include <vector>

namespace demo {
struct Block {
	long key;
	long payload[3];
};

__attribute__((noinline)) std::vector<Block *> produce(int task, int blocks)
{
	std::vector<Block *> v;

	v.reserve(blocks);
	for (int i = 0; i < blocks; i++)
		v.push_back(new Block{ task * 100000L + i, { 0, 0, 0 } });
	return v;
}

__attribute__((noinline)) long consume(std::vector<Block *> &v)
{
	long sum = 0;

	for (Block *b : v) {
		sum += b->key;
		delete b;
	}
	return sum;
}
} // namespace demo

int main(int argc, char **argv)
{
	int tasks = argc > 1 ? atoi(argv[1]) : 400, blocks = argc > 2 ? atoi(argv[2]) : 1000;
	int parallel = argc > 3 ? atoi(argv[3]) : 4;
	long freed = 0, sum = 0;

	for (int t = 0; t < tasks; t += parallel) {
		std::vector<std::future<std::vector<demo::Block *>>> fs;

		for (int k = t; k < t + parallel && k < tasks; k++)
			fs.push_back(std::async(std::launch::async, demo::produce, k, blocks));
		for (auto &f : fs) {
			std::vector<demo::Block *> v = f.get();

			freed += v.size();
			sum += demo::consume(v);
		}
	}
	std::printf("cxx_threads: %d tasks newed %ld blocks of %zu bytes (%ld bytes) from demo::produce, "
		    "all deleted by demo::consume in the main thread\n",
		    tasks, (long)tasks * blocks, sizeof(demo::Block), (long)tasks * blocks * (long)sizeof(demo::Block));
	std::printf("cxx_threads: leaked 0 bytes in 0 allocations\n");
	return freed == (long)tasks * blocks && sum >= 0 ? 0 : 1;
}
