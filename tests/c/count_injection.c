/* A CUDA injection library for the simulated driver's tests: each call of
 * InitializeInjection appends one line, the process id, to the file named by
 * $COUNT_FILE, and returns 1. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int InitializeInjection(void) {
    const char *path = getenv("COUNT_FILE");
    if (path != NULL) {
        FILE *f = fopen(path, "a");
        if (f != NULL) {
            fprintf(f, "%d\n", (int)getpid());
            fclose(f);
        }
    }
    return 1;
}
