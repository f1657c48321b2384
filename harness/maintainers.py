#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""maintainers.py OURS KERNEL_MAINTAINERS: (re)insert our MAINTAINERS entry
(harness/edit.sh, to carry an edit of the top-level MAINTAINERS into
build/linux; the series itself holds the entry patch by patch).

The entry (OURS, the repository's MAINTAINERS) goes before the first section
of the kernel's file whose title sorts after it.  Only the F: lines that
match files present in the tree (the current directory) are kept, so that
after each patch of the series the entry lists what exists at that point
(our entry names each file, so that every patch that adds a file also
updates MAINTAINERS, as checkpatch asks); an entry without any F: line is
left out.  An entry inserted by an earlier
patch is replaced.
"""
import glob
import re
import sys

ours = [l for l in open(sys.argv[1]).read().strip('\n').split('\n')
        if not l.startswith('#')]
title = ours[0]
ours = [l for l in ours
        if not l.startswith('F:\t') or glob.glob(l[3:].rstrip('/'))]
lines = open(sys.argv[2]).read().split('\n')
if title in lines:
    i = lines.index(title)
    j = lines.index('', i)
    del lines[i:j + 1]
if any(l.startswith('F:\t') for l in ours):
    tag = re.compile(r'^[A-Z]:\t')
    for i in range(100, len(lines) - 1):
        if lines[i - 1] == '' and lines[i] and not tag.match(lines[i]) \
           and tag.match(lines[i + 1]) and lines[i].upper() > title.upper() \
           and lines[i] != 'THE REST':
            lines[i:i] = ours + ['']
            break
    else:
        sys.exit('MAINTAINERS: no place for ' + title)
open(sys.argv[2], 'w').write('\n'.join(lines))
