// samples/runtimes/GrowCache.java: a JVM service's leak in miniature. The
// method growCache() keeps adding 1 KiB arrays to a static list, so the
// JIT compiles it and the page faults of the growing heap come from its
// compiled code.
//
// Usage: java GrowCache [ROUNDS [PAUSE_MS]]
//
// ROUNDS calls of growCache(256) (default 1000); PAUSE_MS first, so that a
// recorder can attach with -p. Prints the truth: the arrays kept and the
// method that kept them.
import java.util.ArrayList;
import java.util.List;

public class GrowCache {
    static final List<byte[]> cache = new ArrayList<>();

    static void growCache(int n) {
        for (int i = 0; i < n; i++)
            cache.add(new byte[1024]);
    }

    public static void main(String[] args) throws InterruptedException {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        if (args.length > 1)
            Thread.sleep(Integer.parseInt(args[1]));
        for (int r = 0; r < rounds; r++)
            growCache(256);
        System.out.println("GrowCache: " + cache.size() + " arrays of 1024 bytes from GrowCache.growCache");
    }
}
