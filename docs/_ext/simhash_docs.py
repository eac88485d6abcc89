"""What the documentation adds to Sphinx: the ``setting`` and ``stat`` entries (a target, an index entry and a
role to link to each, as Scrapy's own documentation has for its settings), and the ``simhash-dedup-cli``
directive, which renders the command line from its parser, so the reference cannot drift from the code."""

from __future__ import annotations

import argparse
import functools
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class CommandLine(SphinxDirective):
    """The command line of ``scrapy_simhash_dedup.cli.parser()``: a section per sub-command with its
    description, usage and arguments, read from the parser itself (through the attributes ``--help`` reads:
    argparse has no public way to walk a parser)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from scrapy_simhash_dedup.cli import parser

        top = parser()
        rendered: list[nodes.Node] = [*self._text(top.description), _usage(top), *self._groups(top)]
        for action in top._actions:
            if isinstance(action, argparse._SubParsersAction):
                summaries = {choice.dest: choice.help for choice in action._choices_actions}
                for name, command in action.choices.items():
                    rendered.append(self._command(name, summaries.get(name), command))
        return rendered

    def _command(self, name: str, summary: str | None, command: argparse.ArgumentParser) -> nodes.section:
        title = f"simhash-dedup {name}"
        section = nodes.section(ids=[nodes.make_id(title)], names=[nodes.fully_normalize_name(title)])
        section += nodes.title(text=title)
        for text in (summary, command.description):
            if text:
                section.extend(self._text(text))
        section += _usage(command)
        section.extend(self._groups(command))
        return section

    def _groups(self, command: argparse.ArgumentParser) -> list[nodes.Node]:
        """Each argument group of ``command`` as a titled option list (sub-commands are listed apart)."""
        rendered: list[nodes.Node] = []
        for group in command._action_groups:
            actions = [
                action
                for action in group._group_actions
                if action.help is not argparse.SUPPRESS and not isinstance(action, argparse._SubParsersAction)
            ]
            if not actions:
                continue
            rendered.append(nodes.rubric(text=group.title[:1].upper() + group.title[1:]))
            options = nodes.option_list()
            for action in actions:
                options += self._option(command, action)
            rendered.append(options)
        return rendered

    def _option(self, command: argparse.ArgumentParser, action: argparse.Action) -> nodes.option_list_item:
        group = nodes.option_group()
        for name in action.option_strings or [action.metavar or action.dest]:
            option = nodes.option("", nodes.option_string(text=name))
            if action.option_strings and action.nargs != 0:
                option += nodes.option_argument(text=_metavar(action), delimiter=" ")
            group += option
        return nodes.option_list_item("", group, nodes.description("", *self._text(_help(command, action))))

    def _text(self, text: str) -> list[nodes.Node]:
        """A help text, its `code` marked up as the page's parser (MyST) reads it."""
        return self.parse_text_to_nodes(text)


def _usage(command: argparse.ArgumentParser) -> nodes.literal_block:
    """The usage as ``--help`` prints it, wrapped at the same width whatever the terminal building the docs."""
    command.formatter_class = functools.partial(command.formatter_class, width=100)
    usage = command.format_usage().strip()
    return nodes.literal_block(usage, usage, language="text")


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "{" + ",".join(map(str, action.choices)) + "}"
    return action.dest.upper()


def _help(command: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help text as ``--help`` shows it: ``%(default)s`` and the like filled in."""
    values: dict[str, Any] = {**vars(action), "prog": command.prog}
    values = {key: getattr(value, "__name__", value) for key, value in values.items() if value is not argparse.SUPPRESS}
    if action.choices is not None:
        values["choices"] = ", ".join(map(str, action.choices))
    return (action.help or "") % values


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_crossref_type("setting", "setting", indextemplate="pair: %s; setting")
    app.add_crossref_type("stat", "stat", indextemplate="pair: %s; stat")
    app.add_directive("simhash-dedup-cli", CommandLine)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
