// samples/cxx_cases.cc: C++ blocks a leak checker gets wrong without
// knowing how C++ lays them out, and the sized delete that an allocator
// may end by jumping to its free.
//
// usage: cxx_cases MODE [N]
//
//   sized N       N objects newed and deleted with sized delete
//   churn S       new and sized delete for S seconds, a pause every 1,000
//   stdstring     a global std::string of the old (reference-counted) ABI:
//                 its only pointer to its buffer points 24 bytes in, past
//                 the length, capacity and count
//   newarray      new[] of a class with a destructor: the pointer kept is
//                 8 bytes in, past the count of elements
//   multipleinheritance
//                 an object of a class with two polymorphic bases, kept
//                 only as a pointer to the second base, inside the object
//   length64      a block that starts with the length of the rest, kept
//                 as a pointer past that length (as sqlite keeps its
//                 allocations)
//
// Each heuristic mode keeps its block in a global until exit: still
// reachable, as valgrind's --leak-check-heuristics (all four on by
// default) counts it, and possibly lost without them. Prints its truth
// with write(2): "cxx_cases: KIND B bytes in N blocks".
#define _GLIBCXX_USE_CXX11_ABI 0
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#include <unistd.h>

namespace {

void say(const char *what, unsigned long bytes, unsigned long blocks)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "cxx_cases: %s %lu bytes in %lu blocks\n", what, bytes, blocks);

	if (write(1, line, (size_t)n) != n)
		exit(1);
}

} // namespace

// In a named namespace: a global of a type of an unnamed one has no
// linkage, and the compiler drops it and the new that fills it.
namespace cases {

struct Obj {
	long v[7];
};

struct Counted {
	long v[3];
	~Counted() { v[0] = 0; }
};

struct First {
	virtual ~First() {}
	virtual long one() { return 1; }
	long a = 1;
};

struct Second {
	virtual ~Second() {}
	virtual long two() { return 2; }
	long b = 2;
};

struct Both : First, Second {
	long c = 3;
};

} // namespace cases

using namespace cases;

// Globals with external linkage: the compiler keeps every store to them.
std::string *kept_string;
Counted *kept_array;
Second *kept_second;
char *kept_length64;

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 1000;

	if (!strcmp(mode, "sized")) {
		for (long i = 0; i < n; i++) {
			Obj *volatile o = new Obj;

			o->v[0] = i;
			delete o;
		}
		printf("cxx_cases: %ld new, %ld sized delete\n", n, n);
	} else if (!strcmp(mode, "churn")) {
		time_t end = time(nullptr) + n;
		long calls = 0;

		while (time(nullptr) < end) {
			for (int i = 0; i < 1000; i++) {
				Obj *volatile o = new Obj;

				o->v[0] = i;
				delete o;
			}
			calls += 1000;
			usleep(1000);
		}
		printf("cxx_cases: %ld new, %ld sized delete\n", calls, calls);
	} else if (!strcmp(mode, "stdstring")) {
		// Built in a global's storage, with no destructor to run at
		// exit: its buffer, the block, is reached only through the
		// string's pointer 24 bytes in.
		alignas(std::string) static char storage[sizeof(std::string)];

		kept_string = new (storage) std::string(100, 'x');
		say("still reachable", 24 + 100 + 1, 1);
	} else if (!strcmp(mode, "newarray")) {
		kept_array = new Counted[10];
		say("still reachable", 8 + 10 * sizeof(Counted), 1);
	} else if (!strcmp(mode, "multipleinheritance")) {
		kept_second = new Both;
		say("still reachable", sizeof(Both), 1);
	} else if (!strcmp(mode, "length64")) {
		size_t size = 200;
		char *b = (char *)malloc(size);

		*(unsigned long *)b = size - 8;
		memset(b + 8, 0, size - 8);
		kept_length64 = b + 8;
		say("still reachable", size, 1);
	} else {
		fprintf(stderr, "usage: cxx_cases sized|churn|stdstring|newarray|multipleinheritance|length64 [N]\n");
		return 2;
	}
	return 0;
}
