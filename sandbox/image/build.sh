#!/usr/bin/env bash
# Placeholder until the Docker sandbox lands: builds nothing.
exit 0
