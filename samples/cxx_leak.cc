// samples/cxx_leak.cc: a C++ leak, for demangled names. Cache::remember()
// mallocs a Node per key and never frees them; main() news the Cache and
// never deletes it. (remember() calls malloc directly: a frame-pointer walk
// cannot see past operator new, which libstdc++ builds without frame
// pointers.)
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

	for (int i = 0; i < n; i++)
		c->remember(i);
	std::printf("cxx_leak: leaked %zu bytes in %d allocations from demo::Cache::remember(int)\n",
		    n * sizeof(demo::Node), n);
	std::printf("cxx_leak: leaked %zu bytes in 1 allocations from main\n", sizeof(demo::Cache));
	return 0;
}
