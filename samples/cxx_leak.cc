// samples/cxx_leak.cc: C++ leaks, for demangled names and for the frame
// that called operator new. Cache::remember() mallocs a Node per key and
// never frees them; Registry::add() news an Entry per key and keeps only
// the last; main() news the Cache and the Registry and never deletes them.
// libstdc++ builds operator new without frame pointers, so a frame-pointer
// walk taken in malloc skips straight from operator new to main: only an
// unwinder that reads operator new's CFI finds Registry::add().
//
// usage: cxx_leak [N]    (default 100)
#include <cstdio>
#include <cstdlib>

namespace demo {
struct Node {
	Node *next;
	long key;
	char payload[48];
};

class Cache {
public:
	void remember(int key);
	Node *head = nullptr;
};

struct Entry {
	long id;
	char name[24];
};

class Registry {
public:
	__attribute__((noinline)) void add(int id);
	Entry *last = nullptr;
};

void Registry::add(int id)
{
	Entry *e = new Entry();

	e->id = id;
	last = e;
}

void Cache::remember(int key)
{
	Node *n = static_cast<Node *>(std::malloc(sizeof(Node)));

	if (!n)
		std::abort();
	n->key = key;
	n->next = head;
	head = n;
}
} // namespace demo

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	demo::Cache *c = new demo::Cache;
	demo::Registry *r = new demo::Registry;

	for (int i = 0; i < n; i++) {
		c->remember(i);
		r->add(i);
	}
	std::printf("cxx_leak: leaked %zu bytes in %d allocations from demo::Cache::remember(int)\n",
		    n * sizeof(demo::Node), n);
	std::printf("cxx_leak: leaked %zu bytes in %d allocations from demo::Registry::add(int)\n",
		    n * sizeof(demo::Entry), n);
	std::printf("cxx_leak: leaked %zu bytes in 2 allocations from main\n",
		    sizeof(demo::Cache) + sizeof(demo::Registry));
	return 0;
}
