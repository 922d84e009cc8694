package io.outrun.sandbox;

/** An execution asked for an image the operator did not allow on this node: never retried. */
public class ImageNotAllowedException extends SandboxException {
    private final String image;

    public ImageNotAllowedException(String image, String message) {
        super(message);
        this.image = image;
    }

    public String image() {
        return image;
    }
}
