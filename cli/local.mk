# cli/local.mk — the spade command-line program (cli → designer, agent → core),
# and the core parts the CLI owns (the checker and the registry) with their tests.
spade_SOURCES += cli/main.c cli/util.c cli/cmd_check.c cli/cmd_run.c cli/cmd_play.c cli/cmd_new.c cli/cmd_list.c \
	cli/cmd_pretrain.c cli/cmd_vendi.c cli/cmd_archive.c cli/cmd_train.c cli/cmd_eval.c cli/cmd_gates.c
noinst_HEADERS += cli/cli.h cli/train_config.h cli/run_dir.h
spade_SOURCES += cli/cmd_tokenizer.c cli/train_summary.c cli/train_config.c cli/run_dir.c
# `spade report`: plots (our own SVG writer, no dependency) and a markdown summary of a run.
spade_SOURCES += cli/cmd_report.c cli/report_svg.c cli/report_compare.c
noinst_HEADERS += cli/report_svg.h cli/report_log.h
spade_SOURCES += cli/cmd_demos.c cli/transcript_text.c
# `spade model`: fetch (the CLI's one posix_spawn, of pip/python/curl), list, info.
spade_SOURCES += cli/cmd_model.c
# `spade generate`: a prompt's continuation by a pretrained model or a checkpoint.
spade_SOURCES += cli/cmd_generate.c
# `spade export`: a Llama-family policy as a GGUF file (core/policy/gguf_export.c).
spade_SOURCES += cli/cmd_export.c
noinst_HEADERS += cli/transcript_text.h


check_PROGRAMS += tests/test_check tests/test_registry
TESTS += tests/test_check tests/test_registry tests/test_cli.sh
tests_test_check_SOURCES = tests/test_check.c tests/testutil.c tests/testutil.h
tests_test_check_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_check_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
tests_test_registry_SOURCES = tests/test_registry.c tests/testutil.c tests/testutil.h
tests_test_registry_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_registry_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/test_cli.sh tests/envs/cli_good.c tests/envs/cli_nohint.c tests/envs/cli_badsolve.c \
	tests/envs/cli_growobs.c tests/envs/cli_crashempty.c tests/envs/cli_loop.c tests/envs/cli_global.c \
	tests/envs/cli_broken.c tests/envs/check_extreme.c tests/envs/check_uninit.c tests/envs/check_emptywin.c \
	tests/envs/check_coinflip.c

# `spade serve`: the JSON-lines protocol server (docs/protocol.md). Its JSON
# reader/writer lives in the library (core/json.h) so tests and other front
# ends can use it; the protocol itself is the CLI's (cli/serve.h).
libspade_a_SOURCES += core/json.c
noinst_HEADERS += core/json.h cli/serve.h cli/serve_internal.h
serve_sources = cli/serve_proto.c cli/serve_ops.c cli/serve_batch.c cli/serve_reply.c
spade_SOURCES += cli/cmd_serve.c $(serve_sources)
check_PROGRAMS += tests/test_serve
TESTS += tests/test_serve
tests_test_serve_SOURCES = tests/test_serve.c $(serve_sources) tests/testutil.c tests/testutil.h
tests_test_serve_CPPFLAGS = $(AM_CPPFLAGS) -iquote $(top_srcdir)/cli
tests_test_serve_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_serve_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
# spade run --servers: the C client of the protocol against two servers (core/served_episodes.c)
TESTS += tests/test_servers.sh
EXTRA_DIST += tests/test_servers.sh
# cmd_pretrain.c reads .transcript files through transcript_text.c
tests_test_policy_pretrain_SOURCES += cli/transcript_text.c cli/util.c

# spade generate on SmolLM2 against llama.cpp's log-probs (tests/data/llama_ref, from
# tools/llama_reference.py); skips when the model is not fetched.
TESTS += tests/test_pretrained.sh
EXTRA_DIST += tests/test_pretrained.sh tools/llama_reference.py
