/*
 * record/objects/archive.c: `memsight archive [--embed minimal|full] FILE`; the
 * packing itself is embed_archive's.
 */
#include "archive.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../../formats/msg.h"
#include "../recorder.h"
#include "embed.h"

static const char usage_text[] =
	"usage: memsight archive [--embed minimal|full] [-o OUT] FILE\n"
	"\n"
	"Embed into a finished trace the objects its stacks need (their unwind and\n"
	"symbol tables, and their debug information where this machine has it), so\n"
	"it can be analyzed where the binaries are not. Run it on the machine the\n"
	"trace was recorded on; objects the trace already carries are packed again.\n"
	"A ring becomes a linear trace of the window it holds.\n"
	"\n"
	"      --embed MODE   minimal (default): the unwind and symbol tables; full: the\n"
	"                     whole files\n"
	"  -o, --output OUT   write the archived trace to OUT, and leave FILE as it is\n"
	"                     (FILE is replaced otherwise, which a ring a recorder still\n"
	"                     writes refuses)\n"
	"  -h, --help         show this help\n";

int archive_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "embed", required_argument, NULL, 'E' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct embed_archived done;
	const char *to = NULL;
	struct stat a, b;
	int mode = EMBED_MINIMAL, c;
	char err[1024];

	msg_init("memsight archive");
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'E':
			mode = embed_mode_parse(optarg);
			if (mode <= EMBED_NONE)
				return msg_error("unknown --embed mode '%s': use minimal or full", optarg), 2;
			break;
		case 'o':
			to = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			fputs(usage_text, stderr);
			return 2;
		}
	}
	if (optind + 1 != argc)
		return msg_error("give one trace file (see memsight archive -h)"), 2;
	if (to && rec_output_check(to, 0))
		return 1;
	/* OUT that is FILE itself is FILE replaced, and checked as that. */
	if (to && !stat(to, &a) && !stat(argv[optind], &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		to = NULL;
	if (embed_archive(argv[optind], to, mode, &done, err, sizeof(err)))
		return msg_error("%s", err), 1;
	msg_note("'%s' now carries %llu objects and the debug information of %llu (%.1f MiB before compression)%s%s",
		 to ? to : argv[optind], (unsigned long long)done.objects, (unsigned long long)done.debug,
		 done.bytes / 1048576.0, done.replaced ? ", replacing the ones it had" : "",
		 done.not_carried ? "; not the others, which memsight info lists with the reason" : "");
	return 0;
}
