package io.outrun.sandbox.files;

import java.io.IOException;
import java.io.InputStream;

/** A tar stream to extract into a workdir, opened when it is written (a workspace streams from the database). */
@FunctionalInterface
public interface TarSource {
    InputStream open() throws IOException;
}
