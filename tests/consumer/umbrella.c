/* umbrella.c — a program that includes fusenet/fusenet.h alone: the public
 * API in one include. scripts/check_public_api.py compiles it to list what
 * the public headers declare (and that fusenet.h reaches every one of them)
 * and compares that with what libfusenet.so exports. It does nothing when
 * run. */
#include "fusenet/fusenet.h"

int main(void)
{
    return fn_version() ? 0 : 1;
}
