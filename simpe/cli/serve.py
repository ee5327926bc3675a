"""`simpe serve`: translators in the loop (simpe.serve)."""
from __future__ import annotations

import argparse
from pathlib import Path

from simpe.cli.common import integer


def add_serve(sub: argparse._SubParsersAction) -> None:
    from simpe.serve.bind import DEFAULT_HOST, DEFAULT_PORT

    p = sub.add_parser("serve", help="post-editing in the browser with live adaptation: projects, translators' links, "
                                     "the server (docs/serve.md)")
    ssub = p.add_subparsers(dest="serve_command", required=True)

    def projects_dir(q: argparse.ArgumentParser) -> None:
        q.add_argument("--projects-dir", type=Path, default=Path("projects"),
                       help="where project folders go (default: %(default)s)")

    def address_flags(q: argparse.ArgumentParser, init: bool) -> None:
        if init:  # the project's address: where serve run listens, and what the links show
            host = f"address the project is served on, and its links show (default: {DEFAULT_HOST}, this machine only)"
            port = f"port the project is served on, and its links show (default: {DEFAULT_PORT})"
        else:
            host = (f"address to bind for this start (default: the project's, from serve init; {DEFAULT_HOST}, this "
                    "machine only, unless it said otherwise)")
            port = f"port for this start (default: the project's, from serve init; {DEFAULT_PORT} unless it said otherwise)"
        q.add_argument("--host", help=f"{host}; any other needs --tls-cert and --tls-key{' at serve run' if init else ''}")
        q.add_argument("--port", type=integer, help=port)

    def server_flags(q: argparse.ArgumentParser) -> None:
        address_flags(q, init=False)
        q.add_argument("--tls-cert", type=Path, help="TLS certificate (PEM), with --tls-key: serve HTTPS")
        q.add_argument("--tls-key", type=Path, help="TLS private key (PEM)")
        q.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                       help="a further host name the translators' browsers use for this server (repeatable)")
        q.add_argument("--threads", type=integer, default=1, help="torch threads the translators' models share (default: %(default)s)")
        q.add_argument("--no-lookups", action="store_true",
                       help="serve without the workbench's translation-memory matches and glossary hits (make bench-serve "
                            "compares the two)")

    init = ssub.add_parser("init", help="create a project (a stream, a model, a preset, translators); prints each "
                                        "translator's link once (tokens are stored hashed)")
    init.add_argument("name", help="project name (lower-case letters, digits, _ and -)")
    init.add_argument("--preset", default="full", help="the adaptation preset under adapters/ (default: %(default)s)")
    init.add_argument("--translators", nargs="+", required=True, metavar="NAME", help="the translators' names")
    init.add_argument("--dataset", help="dataset name (default: libreoffice)")
    init.add_argument("--split", help="dataset split (default: stream)")
    init.add_argument("--model", help="model folder or hub id (default: the embedded demo model)")
    init.add_argument("--segments", type=integer, help="the first N segments of the stream (default: all)")
    init.add_argument("--protocol", choices=["post-edit", "interactive"],
                      help="post-edit (default), or interactive: the page completes what the translator types")
    init.add_argument("--reset", choices=["none", "document"], help="return to the base model at each document boundary")
    init.add_argument("--glossary", type=Path, metavar="FILE",
                      help="a glossary (TSV or TBX, docs/terms.md) whose terms the page highlights in the source; copied "
                           "into the project")
    init.add_argument("--xliff", type=Path, metavar="FILE",
                      help="make the stream from a CAT tool's XLIFF file (1.2 or 2.x; its ids, inline tags and filled "
                           "targets kept; docs/serve.md); copied into the project")
    init.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                      help="override any config key (repeatable), as simpe simulate")
    address_flags(init, init=True)
    projects_dir(init)
    token = ssub.add_parser("token", help="new links for translators (the old tokens stop working at once, on a running "
                                          "server too); adds a new name (served after the server restarts)")
    token.add_argument("name", help="project name")
    token.add_argument("translators", nargs="+", metavar="TRANSLATOR")
    projects_dir(token)
    export = ssub.add_parser("export", help="write a translator's post-edits (final versions, revisions included) as "
                                            "the targets of the project's XLIFF file, state translated")
    export.add_argument("name", help="project name (made with serve init --xliff)")
    export.add_argument("translator", help="the translator whose post-edits become the targets")
    export.add_argument("--xliff", type=Path, required=True, metavar="OUT",
                        help="the XLIFF file to write (a new file, in a folder that exists; never a link, nor one of the "
                             "project's own files)")
    export.add_argument("--overwrite", action="store_true", help="replace OUT when it exists")
    projects_dir(export)
    run = ssub.add_parser("run", help="serve a project until Ctrl+C; every translator resumes at their next segment")
    run.add_argument("name", help="project name")
    projects_dir(run)
    server_flags(run)
    demo = ssub.add_parser("demo", help="make serve: the demo project (demo model, full, 50 stream segments, translators "
                                        "alice and bob), new links, served")
    projects_dir(demo)
    server_flags(demo)
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> None:
    from simpe.errors import ConfigError
    from simpe.serve import project as projects
    from simpe.serve.bind import DEFAULT_HOST, DEFAULT_PORT

    if args.serve_command == "init":
        flags = {"data.name": args.dataset, "data.split": args.split, "model.path": args.model, "data.segments": args.segments,
                 "protocol.name": args.protocol, "reset": args.reset}
        overrides = [f"{key}={value}" for key, value in flags.items() if value is not None] + args.overrides
        project, tokens = projects.create(args.projects_dir, args.name, args.preset, overrides, args.translators,
                                          args.host or DEFAULT_HOST, DEFAULT_PORT if args.port is None else args.port,
                                          glossary=args.glossary, xliff=args.xliff)
        print(f"project {args.name}: {projects.project_dir(args.projects_dir, args.name)}; each link is shown only now:")
        for name, token in tokens.items():
            print(f"  {name}: {project.link(token)}")
        print(f"serve it with: simpe serve run {args.name}  (it listens on {project.address}, the address in these "
              "links; serve run --host/--port serve it elsewhere, and the links then need the same change)")
        return
    if args.serve_command == "token":
        tokens = projects.reissue(args.projects_dir, args.name, args.translators)
        project = projects.load(projects.project_dir(args.projects_dir, args.name))
        for name, token in tokens.items():
            print(f"  {name}: {project.link(token)}")
        print(f"(links to {project.address}, where simpe serve run {args.name} listens unless --host/--port say "
              "otherwise; a running server takes the new tokens at once and refuses the old ones; a translator new "
              "to the project is served once the server is started again)")
        return
    if args.serve_command == "export":
        from simpe.serve.export import export_xliff

        written, total, path = export_xliff(projects.load(projects.project_dir(args.projects_dir, args.name)),
                                            args.translator, args.xliff, overwrite=args.overwrite)
        print(f"{args.xliff}: {written} of {total} segments with {args.translator}'s post-edits (state translated; "
              f"the others as the project's file has them); from {path}")
        return
    if args.threads < 1:
        raise ConfigError(f"--threads must be >= 1, got {args.threads}")
    from simpe.serve.server import check_start, serve

    name = "demo" if args.serve_command == "demo" else args.name
    folder = projects.project_dir(args.projects_dir, name)
    project = projects.load(folder) if args.serve_command == "run" or (folder / projects.PROJECT_FILE).exists() else None
    host = args.host or (project.host if project else DEFAULT_HOST)
    port = args.port if args.port is not None else project.port if project else DEFAULT_PORT
    sock = check_start(host, port, args.tls_cert, args.tls_key)  # every startup error, before tokens and models
    tokens = None
    try:
        if args.serve_command == "demo":
            translators = ["alice", "bob"]
            if project is not None:
                tokens = projects.reissue(args.projects_dir, name, translators)
            else:
                _, tokens = projects.create(args.projects_dir, name, "full", ["data.segments=50"], translators, host, port)
        import torch

        torch.set_num_threads(args.threads)
    except BaseException:
        sock.close()
        raise
    serve(folder, host, port, args.tls_cert, args.tls_key, args.allow_host, tokens, sock=sock, lookups=not args.no_lookups)
